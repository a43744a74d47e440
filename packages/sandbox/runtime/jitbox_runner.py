"""jitbox sandbox: the child side of the JSON-lines protocol for Python tools.

The host copies this module (and a precompiled copy of it) next to the tool package
``jitbox_tool`` and starts ``python3 -I -S -B -c "...; jitbox_runner.main()" <dir>``. Host messages
arrive on stdin and child messages leave on stdout, one JSON object per line (see Protocol.ts).

Every tool module sees ``tool``, ``ToolExecutionMode`` and ``harness`` as builtins (``from jitbox
import tool, harness`` works too). A ``def`` entry point runs synchronously and composes with
``harness.call_tool_sync(name, **args)``; while it waits, nested invocations of the same version
run re-entrantly. An ``async def`` entry point runs on one asyncio loop (imported only then), so
its invocations run concurrently and compose with ``await harness.call_tool(name, **args)``.
"""

import builtins
import contextvars
import enum
import json
import os
import sys
import time

MAX_PAYLOAD_BYTES = 262144
PACKAGE = "jitbox_tool"

# The hot path of a warm invocation (read a line, decode it, call the tool, encode the answer,
# write it) stays in C where it can: one encoder built once (json.dumps builds a JSONEncoder per
# call) and the decoder's C scanner called directly (json.loads adds encoding detection and two
# Python wrappers).
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_scan_once = json.JSONDecoder().scan_once
# Reading the process CPU clock is a system call; a Result carries cpuMs at most every
# CPU_REPORT_SECONDS of wall time (a Failed always does). The host retires a child at half its
# CPU rlimit, so reporting a quarter of a second late cannot let it reach the limit.
CPU_REPORT_SECONDS = 0.25
_cpu_reported = None

_current = contextvars.ContextVar("jitbox_invocation", default=None)
# Ids of the invocations in flight: a nested call from any other is refused here.
_running = set()
_read_buffer = bytearray()
_results = {}
_pending = {}
_queue = []
_next_request = 0
_loop = None
_entry = None
_package_dir = ""

_dumps = _encoder.encode


def _loads(line):
    """One host message (bytes of one line) as json.loads would decode it."""
    text = line.decode("utf-8", "surrogatepass")
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return json.loads(line)  # whitespace around the value, or the decoder's own error
    return value


def _write(data):
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def _send(message):
    _write((_dumps(message) + "\n").encode("utf-8", "surrogatepass"))


def _read_message():
    """The next host message; exits when the host closes stdin."""
    while True:
        newline = _read_buffer.find(b"\n")
        if newline >= 0:
            line = bytes(_read_buffer[:newline])
            del _read_buffer[: newline + 1]
            return _loads(line)
        chunk = os.read(0, 65536)
        if not chunk:
            os._exit(0)
        if not _read_buffer and chunk.find(b"\n") == len(chunk) - 1:
            return _loads(chunk[:-1])  # the usual case: exactly one message
        _read_buffer.extend(chunk)


def _cpu_ms():
    return int(time.process_time() * 1000)


def _cpu_field():
    """``,"cpuMs":N`` for a Result when the last report is CPU_REPORT_SECONDS old, else nothing."""
    global _cpu_reported
    now = time.monotonic()
    if _cpu_reported is not None and now - _cpu_reported < CPU_REPORT_SECONDS:
        return ""
    _cpu_reported = now
    return ',"cpuMs":%d' % _cpu_ms()


class _LogStream:
    """Replaces sys.stdout and sys.stderr: printed text becomes Log messages."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self):
        self._pending = ""

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._emit(line)
        return len(text)

    def _emit(self, line):
        invocation = _current.get()
        if invocation is None:
            _send({"_tag": "Log", "line": line})
        else:
            _send({"_tag": "Log", "line": line, "invocationId": invocation[0]})

    def flush(self):
        if self._pending:
            line, self._pending = self._pending, ""
            self._emit(line)

    def isatty(self):
        return False

    def writable(self):
        return True


class ToolExecutionMode(str, enum.Enum):
    PARALLEL = "parallel"
    SERIAL = "serial"
    Parallel = "parallel"
    Serial = "serial"


class ToolCallError(Exception):
    """Raised by call_tool / call_tool_sync when the nested call failed; its class name is the nested error type."""

    error_type = "Error"


_error_classes = {}


def _error_class(name):
    cls = _error_classes.get(name)
    if cls is None:
        safe = name if name.isidentifier() else "ToolCallError"
        cls = type(safe, (ToolCallError,), {"error_type": name})
        _error_classes[name] = cls
    return cls


def _cleandoc(doc):
    if not doc:
        return None
    lines = doc.expandtabs().split("\n")
    indent = min((len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()), default=0)
    cleaned = [lines[0].strip()] + [l[indent:].rstrip() for l in lines[1:]]
    return "\n".join(cleaned).strip() or None


_SIMPLE = {int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"},
           bool: {"type": "boolean"}, dict: {"type": "object"}, list: {"type": "array"},
           type(None): {"type": "null"}}


def _schema_of(annotation, namespace):
    """A JSON Schema for a parameter annotation; ``{}`` (anything) when it has no simple mapping."""
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, namespace)  # noqa: S307 - the tool's own annotation
        except Exception:
            return {}
    simple = _SIMPLE.get(annotation)
    if simple is not None:
        return dict(simple)
    origin = getattr(annotation, "__origin__", None)
    args = getattr(annotation, "__args__", None) or ()
    if getattr(annotation, "__metadata__", None) is not None and origin is not None:
        return _schema_of(origin, namespace)  # Annotated[T, ...]
    if type(annotation).__name__ == "UnionType" or repr(origin) == "typing.Union":
        return {"anyOf": [_schema_of(a, namespace) for a in args]}
    if repr(origin) == "typing.Literal":
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            schema["items"] = _schema_of(args[0], namespace)
        return schema
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _schema_of(args[1], namespace)
        return schema
    return {}


def _parameters_of(fn):
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    annotations = getattr(fn, "__annotations__", {}) or {}
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    positional = code.co_varnames[: code.co_argcount]
    with_default = set(positional[len(positional) - len(defaults):]) | set(kwdefaults)
    properties = {}
    required = []
    for name in names:
        properties[name] = _schema_of(annotations[name], fn.__globals__) if name in annotations else {}
        if name not in with_default:
            required.append(name)
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


class Tool:
    """What ``@tool(...)`` returns: still callable as the function it wraps."""

    def __init__(self, fn, description, guidelines, parameters, execution_mode):
        if not callable(fn):
            raise TypeError("tool(...) decorates a function")
        self.fn = fn
        self.description = description if description is not None else _cleandoc(getattr(fn, "__doc__", None))
        self.guidelines = guidelines
        self.parameters = parameters
        self.execution_mode = execution_mode
        self.is_async = bool(getattr(fn, "__code__", None) and fn.__code__.co_flags & 0x80)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", "tool")
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def metadata(self):
        metadata = {}
        if self.description is not None:
            metadata["description"] = str(self.description)
        if self.guidelines is not None:
            metadata["guidelines"] = str(self.guidelines)
        parameters = self.parameters if self.parameters is not None else _parameters_of(self.fn)
        if not isinstance(parameters, dict):
            raise TypeError("parameters must be a JSON Schema dict")
        metadata["parameters"] = json.loads(_dumps(parameters))
        if self.execution_mode is not None:
            mode = self.execution_mode
            metadata["executionMode"] = mode.value if isinstance(mode, ToolExecutionMode) else str(mode)
        return metadata


def tool(fn=None, /, *, description=None, guidelines=None, parameters=None, execution_mode=None):
    """``@tool``, ``@tool(guidelines=...)`` or ``tool(fn, guidelines=...)``."""

    def wrap(f):
        return Tool(f, description, guidelines, parameters, execution_mode)

    return wrap if fn is None else wrap(fn)


class _Harness:
    """The composition proxy (D-24)."""

    ToolCallError = ToolCallError

    @property
    def call_id(self):
        invocation = _current.get()
        return None if invocation is None else invocation[1]

    @property
    def depth(self):
        invocation = _current.get()
        return None if invocation is None else invocation[2]

    def _request(self, name, args):
        global _next_request
        invocation = _current.get()
        if invocation is None or invocation[0] not in _running:
            raise _error_class("ToolRejected")(
                "harness.call_tool(%r) ran outside a tool invocation (at module load or after the call ended)" % (name,))
        payload = _dumps(args)
        if len(payload) > MAX_PAYLOAD_BYTES // 4 and len(payload.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD_BYTES:
            raise _error_class("InputTooLarge")("arguments of %r exceed %d bytes of JSON" % (name, MAX_PAYLOAD_BYTES))
        _next_request += 1
        request_id = str(_next_request)
        _write(('{"_tag":"CallTool","requestId":"%s","invocationId":%s,"name":%s,"args":%s}\n' % (
            request_id, _dumps(invocation[0]), _dumps(name), payload)).encode("utf-8", "surrogatepass"))
        return request_id

    def call_tool(self, name, /, **args):
        """``await harness.call_tool(name, **args)`` from an async tool."""
        if _loop is None:
            raise RuntimeError("harness.call_tool is for async tools; a def tool uses harness.call_tool_sync")
        future = _loop.create_future()
        _pending[self._request(name, args)] = future
        return future

    def call_tool_sync(self, name, /, **args):
        """The blocking twin for ``def`` tools. Nested invocations of this tool run while it waits."""
        if _loop is not None:
            raise RuntimeError("do not call call_tool_sync from async code; use await harness.call_tool")
        request_id = self._request(name, args)
        while request_id not in _results:
            _dispatch(_read_message())
        return _unwrap(_results.pop(request_id))


harness = _Harness()


def _unwrap(message):
    if message.get("ok"):
        return message.get("value")
    error = message.get("error") or {}
    failure = _error_class(str(error.get("type", "Error")))(str(error.get("message", "nested call failed")))
    failure._jitbox_request_id = message.get("requestId")
    raise failure


def _relative(filename):
    if not filename:
        return None
    try:
        relative = os.path.relpath(filename, _package_dir)
    except ValueError:
        return None
    return None if relative.startswith("..") else relative.replace(os.sep, "/")


def _failing_file(error):
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    for filename in reversed(frames):
        relative = _relative(filename)
        if relative is not None:
            return relative
    return None


def _load(message):
    global _entry, _loop
    try:
        module = __import__(PACKAGE)  # a top-level package: importlib.import_module would only cost its import
    except SyntaxError as error:
        path = _relative(error.filename)
        detail = "%s: %s (line %s)" % (type(error).__name__, error.msg, error.lineno)
        return _load_failed("CompileError", path, detail)
    except ImportError as error:
        return _load_failed("ImportError", _failing_file(error), "%s: %s" % (type(error).__name__, error))
    except BaseException as error:  # noqa: B036 - SystemExit at import is an activation error too
        return _load_failed("ActivationError", _failing_file(error), "%s: %s" % (type(error).__name__, error))
    name = message["entrypoint"]
    if not hasattr(module, name):
        return _load_failed("MissingEntrypoint", "__init__.py", "__init__.py defines no %r" % name)
    value = getattr(module, name)
    if not isinstance(value, Tool):
        kind = "a plain function" if callable(value) else type(value).__name__
        return _load_failed("EntrypointNotATool", "__init__.py", "%r is %s, not a @tool" % (name, kind))
    try:
        metadata = value.metadata()
    except Exception as error:
        return _load_failed("ActivationError", "__init__.py", "%s: %s" % (type(error).__name__, error))
    _entry = value
    if value.is_async:
        import asyncio
        _loop = asyncio.new_event_loop()
        asyncio.set_event_loop(_loop)
    _send({"_tag": "Loaded", "metadata": metadata})


def _load_failed(reason, path, detail):
    message = {"_tag": "LoadFailed", "reason": reason, "detail": detail}
    if path is not None:
        message["path"] = path
    _send(message)


def _report(invocation_id, value=None, error=None):
    sys.stdout.flush()
    sys.stderr.flush()
    if error is None:
        try:
            payload = _dumps(value)
        except (TypeError, ValueError, RecursionError) as problem:
            error = problem
    if error is not None:
        info = {"type": type(error).__name__, "message": str(error)}
        nested = getattr(error, "_jitbox_request_id", None)
        if nested is not None:
            info["nestedRequestId"] = str(nested)
        _send({"_tag": "Failed", "invocationId": invocation_id, "cpuMs": _cpu_ms(), "error": info})
        return
    # a UTF-8 character is at most 4 bytes (3 for a lone surrogate): short payloads need no count
    if len(payload) > MAX_PAYLOAD_BYTES // 4 and len(payload.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD_BYTES:
        _send({"_tag": "Failed", "invocationId": invocation_id, "cpuMs": _cpu_ms(),
               "error": {"type": "OutputTooLarge", "message": "the result exceeds %d bytes of JSON" % MAX_PAYLOAD_BYTES}})
        return
    _write(('{"_tag":"Result","invocationId":%s%s,"value":%s}\n' % (
        _dumps(invocation_id), _cpu_field(), payload)).encode("utf-8", "surrogatepass"))


def _arguments(message):
    args = message.get("args")
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise TypeError("tool arguments must be a JSON object")
    return args


def _invoke_sync(message):
    invocation_id = message["invocationId"]
    token = _current.set((invocation_id, message.get("callId"), message.get("depth")))
    _running.add(invocation_id)
    try:
        value = _entry.fn(**_arguments(message))
    except BaseException as error:  # noqa: B036 - SystemExit inside a tool fails that call only
        if isinstance(error, KeyboardInterrupt):
            raise
        _running.discard(invocation_id)
        _current.reset(token)
        return _report(invocation_id, error=error)
    _running.discard(invocation_id)
    _current.reset(token)
    _report(invocation_id, value)


async def _invoke_async(message):
    invocation_id = message["invocationId"]
    _current.set((invocation_id, message.get("callId"), message.get("depth")))
    _running.add(invocation_id)
    try:
        value = await _entry.fn(**_arguments(message))
    except BaseException as error:  # noqa: B036
        if isinstance(error, KeyboardInterrupt):
            raise
        _running.discard(invocation_id)
        return _report(invocation_id, error=error)
    _running.discard(invocation_id)
    _report(invocation_id, value)


def _dispatch(message):
    tag = message.get("_tag")
    if tag == "Invoke":
        if _loop is None:
            _invoke_sync(message)
        else:
            _loop.create_task(_invoke_async(message))
    elif tag == "CallResult":
        future = _pending.pop(message["requestId"], None)
        if future is not None:
            if not future.done():
                if message.get("ok"):
                    future.set_result(message.get("value"))
                else:
                    try:
                        _unwrap(message)
                    except ToolCallError as error:
                        future.set_exception(error)
        else:
            _results[message["requestId"]] = message
    elif tag == "Load":
        _load(message)


def _on_readable():
    chunk = os.read(0, 65536)
    if not chunk:
        os._exit(0)
    _read_buffer.extend(chunk)
    while True:
        newline = _read_buffer.find(b"\n")
        if newline < 0:
            return
        line = bytes(_read_buffer[:newline])
        del _read_buffer[: newline + 1]
        _dispatch(_loads(line))


def main():
    global _package_dir
    # Descriptors the host held without close-on-exec came through prlimit and bubblewrap: only
    # stdin, stdout and stderr are this process's. Listed, not bounded by RLIMIT_NOFILE: an
    # inherited number may exceed it.
    os.closerange(3, max(map(int, os.listdir("/proc/self/fd"))) + 1)
    root = sys.argv[1]
    _package_dir = os.path.join(root, PACKAGE)
    sys.path.insert(0, root)
    sys.modules["jitbox"] = sys.modules[__name__]
    builtins.tool = tool
    builtins.harness = harness
    builtins.ToolExecutionMode = ToolExecutionMode
    sys.stdout = _LogStream()
    sys.stderr = _LogStream()
    try:
        while _loop is None:
            _dispatch(_read_message())
        _loop.add_reader(0, _on_readable)
        _loop.run_forever()
    except BaseException:  # noqa: B036 - report the crash on the real stderr, then exit
        import traceback
        os.write(2, traceback.format_exc().encode("utf-8", "replace"))
        os._exit(70)
