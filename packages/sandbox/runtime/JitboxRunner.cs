// jitbox sandbox: the child side of the JSON-lines protocol for C# tools (Mono).
//
// The host compiles this file once into JitboxRunner.exe, compiles a tool's package into tool.dll
// (referencing this assembly, so tools see Jitbox.Json and Jitbox.Harness), and starts
// `mono JitboxRunner.exe <dir>`. Host messages arrive on stdin and child messages leave on stdout,
// one JSON object per line (see Protocol.ts). The entry point is a public static class named by
// the version's entrypoint (fully qualified) with `public static string Run(string inputJson)`:
// JSON text in, JSON text out. Optional static string members Description, Guidelines,
// Parameters (JSON Schema text) and ExecutionMode ("parallel" or "serial") are its metadata.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Jitbox
{
    /// <summary>JSON text that does not parse, nests too deep, or a value that has no JSON form.</summary>
    public sealed class JsonException : Exception
    {
        public JsonException(string message) : base(message) { }
    }

    /// <summary>A nested call failed: ErrorType is the nested error's type (ToolNotFound, InvalidArguments, ...).</summary>
    public sealed class ToolCallException : Exception
    {
        public readonly string ErrorType;
        internal readonly string RequestId;

        public ToolCallException(string errorType, string message) : this(errorType, message, null) { }

        internal ToolCallException(string errorType, string message, string requestId) : base(message)
        {
            ErrorType = errorType;
            RequestId = requestId;
        }
    }

    /// <summary>
    /// A small JSON reader and writer. Parse answers Dictionary&lt;string, object&gt;, List&lt;object&gt;,
    /// string, long (integers that fit), double, bool or null; Write takes those (any IDictionary
    /// with string keys, any IEnumerable, any number) back. Both refuse nesting deeper than MaxDepth.
    /// </summary>
    public static class Json
    {
        public const int MaxDepth = 128;

        public static object Parse(string text)
        {
            if (text == null) throw new JsonException("no JSON text (null)");
            var reader = new JsonReader(text);
            return reader.Document(true);
        }

        public static string Write(object value)
        {
            var builder = new StringBuilder();
            WriteValue(builder, value, 0);
            return builder.ToString();
        }

        public static string Quote(string text)
        {
            if (Plain(text)) return "\"" + text + "\"";
            var builder = new StringBuilder(text.Length + 2);
            WriteString(builder, text);
            return builder.ToString();
        }

        /// <summary>Checks JSON text and answers it on one line (a raw newline only occurs between tokens).</summary>
        internal static string OneLine(string text)
        {
            new JsonReader(text).Document(false);
            return text.IndexOf('\n') < 0 ? text : text.Replace('\n', ' ');
        }

        static void WriteValue(StringBuilder builder, object value, int depth)
        {
            if (value == null) { builder.Append("null"); return; }
            var text = value as string;
            if (text != null) { WriteString(builder, text); return; }
            if (value is bool) { builder.Append((bool)value ? "true" : "false"); return; }
            if (value is char) { WriteString(builder, value.ToString()); return; }
            if (value is double || value is float) { WriteDouble(builder, Convert.ToDouble(value, CultureInfo.InvariantCulture)); return; }
            if (value is decimal || value is int || value is long || value is short || value is byte || value is sbyte ||
                value is uint || value is ulong || value is ushort)
            {
                builder.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
                return;
            }
            if (depth >= MaxDepth) throw new JsonException("the value nests deeper than " + MaxDepth + " levels");
            var map = value as IDictionary;
            if (map != null) { WriteObject(builder, map, depth); return; }
            var list = value as IEnumerable;
            if (list != null) { WriteArray(builder, list, depth); return; }
            throw new JsonException("a " + value.GetType().FullName + " has no JSON form");
        }

        static void WriteObject(StringBuilder builder, IDictionary map, int depth)
        {
            builder.Append('{');
            var first = true;
            foreach (DictionaryEntry entry in map)
            {
                var key = entry.Key as string;
                if (key == null) throw new JsonException("object keys must be strings");
                if (!first) builder.Append(',');
                first = false;
                WriteString(builder, key);
                builder.Append(':');
                WriteValue(builder, entry.Value, depth + 1);
            }
            builder.Append('}');
        }

        static void WriteArray(StringBuilder builder, IEnumerable list, int depth)
        {
            builder.Append('[');
            var first = true;
            foreach (var item in list)
            {
                if (!first) builder.Append(',');
                first = false;
                WriteValue(builder, item, depth + 1);
            }
            builder.Append(']');
        }

        static void WriteDouble(StringBuilder builder, double number)
        {
            if (double.IsNaN(number) || double.IsInfinity(number)) throw new JsonException("NaN and infinities have no JSON form");
            builder.Append(number.ToString("R", CultureInfo.InvariantCulture));
        }

        /// <summary>Whether a string needs no escape in JSON.</summary>
        static bool Plain(string text)
        {
            foreach (var c in text) if (c < ' ' || c == '"' || c == '\\') return false;
            return true;
        }

        static void WriteString(StringBuilder builder, string text)
        {
            builder.Append('"');
            foreach (var c in text)
            {
                switch (c)
                {
                    case '"': builder.Append("\\\""); break;
                    case '\\': builder.Append("\\\\"); break;
                    case '\n': builder.Append("\\n"); break;
                    case '\r': builder.Append("\\r"); break;
                    case '\t': builder.Append("\\t"); break;
                    default:
                        if (c < ' ') builder.Append("\\u").Append(((int)c).ToString("x4"));
                        else builder.Append(c);
                        break;
                }
            }
            builder.Append('"');
        }
    }

    /// <summary>A recursive-descent JSON reader bounded by Json.MaxDepth; with build false it only checks.</summary>
    internal sealed class JsonReader
    {
        readonly string text;
        int at;

        internal JsonReader(string text) { this.text = text; }

        internal object Document(bool build)
        {
            Space();
            var value = Value(0, build);
            Space();
            if (at != text.Length) throw Fail("unexpected text after the value");
            return value;
        }

        /// <summary>The members of a top-level object as spans of raw JSON text (the protocol's messages).</summary>
        internal Dictionary<string, string> RawMembers()
        {
            var members = new Dictionary<string, string>();
            Space();
            Expect('{');
            Space();
            if (Peek() == '}') { at++; return members; }
            while (true)
            {
                Space();
                var key = String();
                Space();
                Expect(':');
                Space();
                var start = at;
                Skip();
                members[key] = text.Substring(start, at - start);
                Space();
                if (Peek() == ',') { at++; continue; }
                Expect('}');
                return members;
            }
        }

        /// <summary>Steps over one value of JSON text the host encoded, without checking it.</summary>
        void Skip()
        {
            var depth = 0;
            while (at < text.Length)
            {
                var c = text[at++];
                if (c == '"')
                {
                    while (at < text.Length && text[at] != '"') at += text[at] == '\\' ? 2 : 1;
                    at++;
                }
                else if (c == '{' || c == '[') depth++;
                else if (c == '}' || c == ']')
                {
                    if (depth == 0) { at--; return; }
                    depth--;
                }
                else if (c == ',' && depth == 0) { at--; return; }
                if (depth == 0 && (c == '"' || c == '}' || c == ']') ) return;
            }
        }

        object Value(int depth, bool build)
        {
            var c = Peek();
            if (c == '{') return Object(depth, build);
            if (c == '[') return Array(depth, build);
            if (c == '"') return build ? String() : SkipString();
            if (c == 't') { Word("true"); return true; }
            if (c == 'f') { Word("false"); return false; }
            if (c == 'n') { Word("null"); return null; }
            if (c == '-' || (c >= '0' && c <= '9')) return Number(build);
            throw Fail("unexpected character");
        }

        object Object(int depth, bool build)
        {
            if (depth >= Json.MaxDepth) throw Fail("nesting deeper than " + Json.MaxDepth + " levels");
            at++;
            var map = build ? new Dictionary<string, object>() : null;
            Space();
            if (Peek() == '}') { at++; return map; }
            while (true)
            {
                Space();
                if (Peek() != '"') throw Fail("expected a string key");
                var key = build ? String() : (string)SkipString();
                Space();
                Expect(':');
                Space();
                var value = Value(depth + 1, build);
                if (build) map[key] = value;
                Space();
                if (Peek() == ',') { at++; continue; }
                Expect('}');
                return map;
            }
        }

        object Array(int depth, bool build)
        {
            if (depth >= Json.MaxDepth) throw Fail("nesting deeper than " + Json.MaxDepth + " levels");
            at++;
            var list = build ? new List<object>() : null;
            Space();
            if (Peek() == ']') { at++; return list; }
            while (true)
            {
                Space();
                var value = Value(depth + 1, build);
                if (build) list.Add(value);
                Space();
                if (Peek() == ',') { at++; continue; }
                Expect(']');
                return list;
            }
        }

        string String()
        {
            Expect('"');
            var start = at;
            while (at < text.Length && text[at] != '"' && text[at] != '\\' && text[at] >= ' ') at++;
            if (at < text.Length && text[at] == '"') return text.Substring(start, at++ - start);
            var builder = new StringBuilder(text, start, at - start, at - start + 16);
            while (true)
            {
                if (at >= text.Length) throw Fail("unterminated string");
                var c = text[at++];
                if (c == '"') return builder.ToString();
                if (c < ' ') throw Fail("control character in a string");
                if (c != '\\') { builder.Append(c); continue; }
                if (at >= text.Length) throw Fail("unterminated escape");
                var e = text[at++];
                switch (e)
                {
                    case '"': builder.Append('"'); break;
                    case '\\': builder.Append('\\'); break;
                    case '/': builder.Append('/'); break;
                    case 'b': builder.Append('\b'); break;
                    case 'f': builder.Append('\f'); break;
                    case 'n': builder.Append('\n'); break;
                    case 'r': builder.Append('\r'); break;
                    case 't': builder.Append('\t'); break;
                    case 'u':
                        if (at + 4 > text.Length) throw Fail("short \\u escape");
                        int code;
                        if (!int.TryParse(text.Substring(at, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code)) throw Fail("bad \\u escape");
                        builder.Append((char)code);
                        at += 4;
                        break;
                    default: throw Fail("bad escape");
                }
            }
        }

        object SkipString()
        {
            at++;
            while (at < text.Length)
            {
                var c = text[at++];
                if (c == '"') return null;
                if (c < ' ') throw Fail("control character in a string");
                if (c != '\\') continue;
                if (at >= text.Length) break;
                var e = text[at++];
                if (e == 'u')
                {
                    for (var k = 0; k < 4; k++, at++)
                    {
                        if (at >= text.Length || Uri.IsHexDigit(text[at]) == false) throw Fail("bad \\u escape");
                    }
                }
                else if ("\"\\/bfnrt".IndexOf(e) < 0) throw Fail("bad escape");
            }
            throw Fail("unterminated string");
        }

        object Number(bool build)
        {
            var start = at;
            if (Peek() == '-') at++;
            if (Peek() == '0') at++;
            else if (!Digits()) throw Fail("bad number");
            var integral = true;
            if (Peek() == '.') { at++; integral = false; if (!Digits()) throw Fail("bad number"); }
            if (Peek() == 'e' || Peek() == 'E')
            {
                at++;
                integral = false;
                if (Peek() == '+' || Peek() == '-') at++;
                if (!Digits()) throw Fail("bad number");
            }
            if (!build) return null;
            var literal = text.Substring(start, at - start);
            long whole;
            if (integral && long.TryParse(literal, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out whole)) return whole;
            return double.Parse(literal, NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        bool Digits()
        {
            var start = at;
            while (at < text.Length && text[at] >= '0' && text[at] <= '9') at++;
            return at > start;
        }

        void Word(string word)
        {
            if (string.CompareOrdinal(text, at, word, 0, word.Length) != 0) throw Fail("unexpected word");
            at += word.Length;
        }

        void Space()
        {
            while (at < text.Length && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) at++;
        }

        char Peek() { return at < text.Length ? text[at] : '\0'; }

        void Expect(char c)
        {
            if (Peek() != c) throw Fail("expected '" + c + "'");
            at++;
        }

        JsonException Fail(string why) { return new JsonException("invalid JSON at offset " + at + ": " + why); }
    }

    /// <summary>What a tool may ask of the harness while it runs (D-24): nested calls and the call's identity.</summary>
    public static class Harness
    {
        /// <summary>The host's call id of the invocation running now (null outside one).</summary>
        public static string CallId { get { var i = Runner.Current; return i == null ? null : i.CallId; } }

        /// <summary>How deep the invocation running now is nested (0 for a call from the model).</summary>
        public static int Depth { get { var i = Runner.Current; return i == null ? 0 : i.Depth; } }

        /// <summary>The name the running tool was called by.</summary>
        public static string ToolName { get { var i = Runner.Current; return i == null ? null : i.ToolName; } }

        /// <summary>
        /// Calls another tool with a JSON object of arguments and answers its value as JSON text; a
        /// failed call throws ToolCallException. Blocks; nested invocations of this tool run meanwhile.
        /// </summary>
        public static string CallTool(string name, string argsJson)
        {
            return Runner.CallTool(name, argsJson);
        }

        /// <summary>CallTool with a value Json.Write turns into the arguments, answering the parsed value.</summary>
        public static object CallTool(string name, IDictionary<string, object> args)
        {
            return Json.Parse(Runner.CallTool(name, Json.Write(args)));
        }
    }

    /// <summary>The entry point of a C# tool contract: the one public type of the package with a static Run(string).</summary>
    public static class Contract
    {
        static Func<string, string> entry;

        public static string Run(string inputJson)
        {
            if (entry == null) entry = Find();
            return entry(inputJson);
        }

        static Func<string, string> Find()
        {
            var found = new List<MethodInfo>();
            foreach (var type in Runner.ToolAssembly.GetExportedTypes())
            {
                if (type.Name == "jitbox_contract") continue;
                var run = Runner.RunMethod(type);
                if (run != null) found.Add(run);
            }
            if (found.Count != 1)
            {
                throw new InvalidOperationException("toolCode must declare exactly one public type with public static string Run(string inputJson); found " + found.Count);
            }
            return (Func<string, string>)Delegate.CreateDelegate(typeof(Func<string, string>), found[0]);
        }
    }

    /// <summary>
    /// An Invoke line as the host writes it (its members in one order, strings without escapes), read
    /// by position: the hot path of a warm call. Anything else answers null and goes through JsonReader.
    /// </summary>
    internal static class InvokeLine
    {
        const string Start = "{\"_tag\":\"Invoke\"";

        internal static Invocation Read(string line)
        {
            if (!line.StartsWith(Start, StringComparison.Ordinal) || line[line.Length - 1] != '}') return null;
            var at = Start.Length;
            string id, callId, depth, toolName, cancellable;
            if (!Member(line, ref at, "invocationId", true, out id) || !Member(line, ref at, "callId", true, out callId) ||
                !Member(line, ref at, "depth", false, out depth) || !Member(line, ref at, "toolName", true, out toolName) ||
                !Member(line, ref at, "cancellable", false, out cancellable) || !Key(line, ref at, "args"))
            {
                return null;
            }
            int level;
            if (!int.TryParse(depth, NumberStyles.None, CultureInfo.InvariantCulture, out level)) return null;
            return new Invocation { Id = id, CallId = callId, Depth = level, ToolName = toolName, Args = line.Substring(at, line.Length - 1 - at) };
        }

        /// <summary>`,"key":value` at `at`: a string without escapes (its text) or a number or literal.</summary>
        static bool Member(string line, ref int at, string key, bool text, out string value)
        {
            value = null;
            if (!Key(line, ref at, key) || at >= line.Length) return false;
            if (!text)
            {
                var end = at;
                while (end < line.Length && line[end] != ',' && line[end] != '}') end++;
                if (end == at) return false;
                value = line.Substring(at, end - at);
                at = end;
                return true;
            }
            if (line[at] != '"') return false;
            for (var i = at + 1; i < line.Length; i++)
            {
                var c = line[i];
                if (c == '\\' || c < ' ') return false;
                if (c != '"') continue;
                value = line.Substring(at + 1, i - at - 1);
                at = i + 1;
                return true;
            }
            return false;
        }

        /// <summary>Steps over `,"key":` at `at`.</summary>
        static bool Key(string line, ref int at, string key)
        {
            if (at + key.Length + 4 > line.Length || line[at] != ',' || line[at + 1] != '"') return false;
            if (string.CompareOrdinal(line, at + 2, key, 0, key.Length) != 0) return false;
            if (line[at + 2 + key.Length] != '"' || line[at + 3 + key.Length] != ':') return false;
            at += key.Length + 4;
            return true;
        }
    }

    internal sealed class Invocation
    {
        internal string Id;
        internal string CallId;
        internal int Depth;
        internal string ToolName;
        internal string Args;
        internal bool Running;
    }

    /// <summary>Console.Out and Console.Error inside the child: printed lines become Log messages.</summary>
    internal sealed class LogWriter : TextWriter
    {
        readonly StringBuilder pending = new StringBuilder();

        public override Encoding Encoding { get { return Encoding.UTF8; } }

        public override void Write(char value)
        {
            if (value == '\n') { Emit(); return; }
            pending.Append(value);
        }

        public override void Write(string value)
        {
            if (value == null) return;
            foreach (var c in value) Write(c);
        }

        public override void Flush()
        {
            if (pending.Length > 0) Emit();
        }

        void Emit()
        {
            var line = pending.ToString();
            pending.Length = 0;
            var current = Runner.Current;
            Runner.Send(current == null
                ? "{\"_tag\":\"Log\",\"line\":" + Json.Quote(line) + "}"
                : "{\"_tag\":\"Log\",\"line\":" + Json.Quote(line) + ",\"invocationId\":" + Json.Quote(current.Id) + "}");
        }
    }

    internal static class Runner
    {
        const int MaxPayloadBytes = 262144;
        const double CpuReportSeconds = 0.25;

        [DllImport("libc", EntryPoint = "close")]
        static extern int CloseDescriptor(int fd);

        [DllImport("libc", EntryPoint = "dup")]
        static extern int Duplicate(int fd);

        [DllImport("libc", EntryPoint = "dup2")]
        static extern int DuplicateTo(int fd, int target);

        internal static Assembly ToolAssembly;
        static Func<string, string> entry;
        static Stream input;
        static int output = 1;
        static readonly object sendLock = new object();
        static readonly byte[] readBuffer = new byte[65536];
        static int readStart;
        static int readEnd;
        static readonly MemoryStream partial = new MemoryStream();
        static readonly List<Invocation> stack = new List<Invocation>();
        static readonly Dictionary<string, Dictionary<string, string>> results = new Dictionary<string, Dictionary<string, string>>();
        static Thread mainThread;
        static int nextRequest;
        static DateTime cpuReported = DateTime.MinValue;
        static string root;

        internal static Invocation Current
        {
            get { return Thread.CurrentThread == mainThread && stack.Count > 0 ? stack[stack.Count - 1] : null; }
        }

        static int Main(string[] args)
        {
            CloseInherited();
            mainThread = Thread.CurrentThread;
            root = args[0];
            input = Console.OpenStandardInput(65536);
            output = ProtocolOutput();
            Console.SetOut(new LogWriter());
            Console.SetError(new LogWriter());
            try
            {
                while (true) Dispatch(ReadMessage());
            }
            catch (Exception crash)
            {
                var bytes = Encoding.UTF8.GetBytes(crash.ToString());
                using (var stderr = Console.OpenStandardError()) stderr.Write(bytes, 0, bytes.Length);
                return 70;
            }
        }

        /// <summary>Closes the host's descriptors that came through prlimit and bubblewrap (the host names them).</summary>
        static void CloseInherited()
        {
            var named = Environment.GetEnvironmentVariable("JITBOX_INHERITED_FDS");
            if (string.IsNullOrEmpty(named)) return;
            foreach (var part in named.Split(','))
            {
                int fd;
                if (int.TryParse(part, NumberStyles.None, CultureInfo.InvariantCulture, out fd) && fd > 2) CloseDescriptor(fd);
            }
        }

        [DllImport("libc", EntryPoint = "write", SetLastError = true)]
        static extern IntPtr WriteDescriptor(int fd, byte[] buffer, IntPtr count);

        /// <summary>
        /// The protocol's stdout moved to a descriptor of its own, with stderr in its place: what the
        /// runtime itself prints on fd 1 (Environment.FailFast, a crash report) cannot corrupt the protocol.
        /// </summary>
        static int ProtocolOutput()
        {
            var fd = Duplicate(1);
            return fd >= 0 && DuplicateTo(2, 1) >= 0 ? fd : 1;
        }

        static void WriteAll(byte[] bytes)
        {
            var offset = 0;
            while (offset < bytes.Length)
            {
                var chunk = offset == 0 ? bytes : Slice(bytes, offset);
                var written = (long)WriteDescriptor(output, chunk, (IntPtr)chunk.Length);
                if (written < 0)
                {
                    if (Marshal.GetLastWin32Error() == 4) continue; // EINTR
                    Environment.Exit(0); // the host is gone
                }
                offset += (int)written;
            }
        }

        static byte[] Slice(byte[] bytes, int offset)
        {
            var rest = new byte[bytes.Length - offset];
            Buffer.BlockCopy(bytes, offset, rest, 0, rest.Length);
            return rest;
        }

        internal static void Send(string line)
        {
            var bytes = Encoding.UTF8.GetBytes(line + "\n");
            lock (sendLock) WriteAll(bytes);
        }

        /// <summary>The next host message, one line; exits when the host closes stdin.</summary>
        static string ReadMessage()
        {
            while (true)
            {
                for (var i = readStart; i < readEnd; i++)
                {
                    if (readBuffer[i] != (byte)'\n') continue;
                    string line;
                    if (partial.Length == 0) line = Encoding.UTF8.GetString(readBuffer, readStart, i - readStart);
                    else
                    {
                        partial.Write(readBuffer, readStart, i - readStart);
                        line = Encoding.UTF8.GetString(partial.GetBuffer(), 0, (int)partial.Length);
                        partial.SetLength(0);
                    }
                    readStart = i + 1;
                    return line;
                }
                partial.Write(readBuffer, readStart, readEnd - readStart);
                readStart = 0;
                readEnd = input.Read(readBuffer, 0, readBuffer.Length);
                if (readEnd <= 0) Environment.Exit(0);
            }
        }

        static string Text(Dictionary<string, string> message, string key)
        {
            string raw;
            if (!message.TryGetValue(key, out raw) || raw == "null") return null;
            if (raw.Length >= 2 && raw[0] == '"' && raw.IndexOf('\\') < 0) return raw.Substring(1, raw.Length - 2);
            return (string)Json.Parse(raw);
        }

        static void Dispatch(string line)
        {
            var invocation = InvokeLine.Read(line);
            if (invocation != null)
            {
                Invoke(invocation);
                return;
            }
            var message = new JsonReader(line).RawMembers();
            switch (Text(message, "_tag"))
            {
                case "Invoke": Invoke(InvocationOf(message)); break;
                case "CallResult": results[Text(message, "requestId")] = message; break;
                case "Load": Load(Text(message, "entrypoint")); break;
            }
        }

        internal static MethodInfo RunMethod(Type type)
        {
            var run = type.GetMethod("Run", BindingFlags.Public | BindingFlags.Static, null, new[] { typeof(string) }, null);
            return run != null && run.ReturnType == typeof(string) ? run : null;
        }

        static void Load(string entrypoint)
        {
            try
            {
                ToolAssembly = Assembly.LoadFrom(Path.Combine(root, "tool.dll"));
            }
            catch (Exception error)
            {
                LoadFailed("ActivationError", null, "the compiled package did not load: " + error.Message);
                return;
            }
            var type = FindType(entrypoint);
            if (type == null)
            {
                LoadFailed("MissingEntrypoint", null, "the package declares no public type '" + entrypoint + "'");
                return;
            }
            var run = RunMethod(type);
            if (run == null)
            {
                LoadFailed("EntrypointNotATool", null, "'" + entrypoint + "' has no public static string Run(string inputJson)");
                return;
            }
            string metadata;
            try
            {
                RuntimeHelpers.RunClassConstructor(type.TypeHandle);
                metadata = Metadata(type);
            }
            catch (Exception error)
            {
                var inner = Unwrap(error);
                LoadFailed("ActivationError", null, inner.GetType().Name + ": " + inner.Message);
                return;
            }
            entry = (Func<string, string>)Delegate.CreateDelegate(typeof(Func<string, string>), run);
            Send("{\"_tag\":\"Loaded\",\"metadata\":" + metadata + "}");
        }

        static Type FindType(string entrypoint)
        {
            Type[] types;
            try
            {
                types = ToolAssembly.GetExportedTypes();
            }
            catch (ReflectionTypeLoadException)
            {
                return null;
            }
            foreach (var type in types) if (type.FullName == entrypoint) return type;
            Type simple = null;
            foreach (var type in types)
            {
                if (type.Name != entrypoint) continue;
                if (simple != null) return null;
                simple = type;
            }
            return simple;
        }

        static string Metadata(Type type)
        {
            var members = new List<string>();
            var description = Member(type, "Description");
            if (description != null) members.Add("\"description\":" + Json.Quote(description));
            var guidelines = Member(type, "Guidelines");
            if (guidelines != null) members.Add("\"guidelines\":" + Json.Quote(guidelines));
            var parameters = Member(type, "Parameters");
            if (parameters != null)
            {
                if (!(Json.Parse(parameters) is Dictionary<string, object>)) throw new JsonException("Parameters must be a JSON Schema object");
                members.Add("\"parameters\":" + Json.OneLine(parameters));
            }
            var mode = Member(type, "ExecutionMode");
            if (mode != null)
            {
                if (mode != "parallel" && mode != "serial") throw new ArgumentException("ExecutionMode must be \"parallel\" or \"serial\"");
                members.Add("\"executionMode\":" + Json.Quote(mode));
            }
            return "{" + string.Join(",", members.ToArray()) + "}";
        }

        /// <summary>A public static string field or property of the entry type, or null.</summary>
        static string Member(Type type, string name)
        {
            var field = type.GetField(name, BindingFlags.Public | BindingFlags.Static);
            if (field != null && field.FieldType == typeof(string)) return (string)field.GetValue(null);
            var property = type.GetProperty(name, BindingFlags.Public | BindingFlags.Static);
            if (property != null && property.PropertyType == typeof(string) && property.GetGetMethod() != null) return (string)property.GetValue(null, null);
            return null;
        }

        static void LoadFailed(string reason, string path, string detail)
        {
            Send("{\"_tag\":\"LoadFailed\",\"reason\":" + Json.Quote(reason) +
                (path == null ? "" : ",\"path\":" + Json.Quote(path)) + ",\"detail\":" + Json.Quote(detail) + "}");
        }

        static Exception Unwrap(Exception error)
        {
            while ((error is TargetInvocationException || error is TypeInitializationException) && error.InnerException != null)
            {
                error = error.InnerException;
            }
            return error;
        }

        static Invocation InvocationOf(Dictionary<string, string> message)
        {
            string depth, args;
            message.TryGetValue("depth", out depth);
            if (!message.TryGetValue("args", out args) || args == "null") args = "{}";
            return new Invocation
            {
                Id = Text(message, "invocationId"),
                CallId = Text(message, "callId"),
                Depth = ParseDepth(depth),
                ToolName = Text(message, "toolName"),
                Args = args
            };
        }

        static void Invoke(Invocation invocation)
        {
            var args = invocation.Args;
            invocation.Running = true;
            stack.Add(invocation);
            string value = null;
            Exception failure = null;
            try
            {
                value = entry(args);
            }
            catch (Exception error)
            {
                failure = Unwrap(error);
            }
            invocation.Running = false;
            stack.RemoveAt(stack.Count - 1);
            Console.Out.Flush();
            Console.Error.Flush();
            Report(invocation.Id, value, failure);
        }

        static int ParseDepth(string raw)
        {
            int depth;
            if (raw == null) return 0;
            return int.TryParse(raw, NumberStyles.None, CultureInfo.InvariantCulture, out depth)
                ? depth
                : (int)Convert.ToDouble(Json.Parse(raw), CultureInfo.InvariantCulture);
        }

        static void Report(string invocationId, string value, Exception failure)
        {
            string line = null;
            if (failure == null)
            {
                try
                {
                    line = Json.OneLine(value ?? "null");
                    if (line.Length > MaxPayloadBytes / 3 && Encoding.UTF8.GetByteCount(line) > MaxPayloadBytes)
                    {
                        failure = new ToolCallException("OutputTooLarge", "the result exceeds " + MaxPayloadBytes + " bytes of JSON");
                    }
                }
                catch (JsonException problem)
                {
                    failure = new ToolCallException("InvalidOutput", "Run returned text that is not one JSON value: " + problem.Message);
                }
            }
            if (failure != null)
            {
                Send("{\"_tag\":\"Failed\",\"invocationId\":" + Json.Quote(invocationId) + ",\"cpuMs\":" + CpuMs() + ",\"error\":" + ErrorInfo(failure) + "}");
                return;
            }
            Send("{\"_tag\":\"Result\",\"invocationId\":" + Json.Quote(invocationId) + CpuField() + ",\"value\":" + line + "}");
        }

        static string ErrorInfo(Exception failure)
        {
            var nested = failure as ToolCallException;
            var type = nested != null ? nested.ErrorType : failure.GetType().Name;
            var info = "{\"type\":" + Json.Quote(type) + ",\"message\":" + Json.Quote(failure.Message ?? "");
            if (nested != null && nested.RequestId != null) info += ",\"nestedRequestId\":" + Json.Quote(nested.RequestId);
            return info + "}";
        }

        static long CpuMs()
        {
            return (long)System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime.TotalMilliseconds;
        }

        /// <summary>`,"cpuMs":N` when the last report is CpuReportSeconds old, else nothing (reading it is a system call).</summary>
        static string CpuField()
        {
            var now = DateTime.UtcNow;
            if ((now - cpuReported).TotalSeconds < CpuReportSeconds) return "";
            cpuReported = now;
            return ",\"cpuMs\":" + CpuMs();
        }

        internal static string CallTool(string name, string argsJson)
        {
            var invocation = Current;
            if (invocation == null || !invocation.Running)
            {
                throw new ToolCallException("ToolRejected", "Harness.CallTool(\"" + name + "\") ran outside a tool invocation (at load, on another thread, or after the call ended)");
            }
            if (name == null) throw new ArgumentNullException("name");
            string args;
            try
            {
                args = Json.OneLine(argsJson ?? "{}");
            }
            catch (JsonException problem)
            {
                throw new ToolCallException("InvalidArguments", "the arguments of " + name + " are not JSON: " + problem.Message);
            }
            if (args.Length > MaxPayloadBytes / 4 && Encoding.UTF8.GetByteCount(args) > MaxPayloadBytes)
            {
                throw new ToolCallException("InputTooLarge", "arguments of " + name + " exceed " + MaxPayloadBytes + " bytes of JSON");
            }
            var requestId = (++nextRequest).ToString(CultureInfo.InvariantCulture);
            Send("{\"_tag\":\"CallTool\",\"requestId\":\"" + requestId + "\",\"invocationId\":" + Json.Quote(invocation.Id) +
                ",\"name\":" + Json.Quote(name) + ",\"args\":" + args + "}");
            Dictionary<string, string> answer;
            while (!results.TryGetValue(requestId, out answer)) Dispatch(ReadMessage());
            results.Remove(requestId);
            return Unwrap(answer, requestId);
        }

        static string Unwrap(Dictionary<string, string> answer, string requestId)
        {
            string ok;
            if (answer.TryGetValue("ok", out ok) && ok == "true")
            {
                string value;
                return answer.TryGetValue("value", out value) ? value : "null";
            }
            string errorJson;
            var error = answer.TryGetValue("error", out errorJson) ? Json.Parse(errorJson) as Dictionary<string, object> : null;
            object type = null, message = null;
            if (error != null)
            {
                error.TryGetValue("type", out type);
                error.TryGetValue("message", out message);
            }
            throw new ToolCallException(type as string ?? "Error", message as string ?? "nested call failed", requestId);
        }
    }
}
