// jitbox sandbox: the child side of the JSON-lines protocol for JavaScript and TypeScript tools.
// It is copied next to the bundled package (tool.mjs) and run by the host with the Node permission
// model; it reads host messages on stdin and writes child messages on stdout (see Protocol.ts).
// The bundle's free references to `tool`, `ToolExecutionMode` and `harness` are bound (esbuild
// `inject`) to the values this file publishes under Symbol.for("jitbox.sandbox.runtime").
import { AsyncLocalStorage } from "node:async_hooks"
import { closeSync } from "node:fs"

// Descriptors the host held without close-on-exec came through prlimit and bubblewrap: close them
// before any tool code runs. The host names them (this process may not read /proc/self/fd), and the
// permission model does not check reads and writes on open descriptors.
for (const fd of (process.env.JITBOX_INHERITED_FDS ?? "").split(",")) if (fd !== "") try { closeSync(Number(fd)) } catch {}
delete process.env.JITBOX_INHERITED_FDS

const MAX_PAYLOAD_BYTES = 262144
const TOOL = Symbol.for("jitbox.tool")
const invocation = new AsyncLocalStorage()

const stdout = process.stdout
const rawWrite = stdout.write.bind(stdout)
const send = (message) => rawWrite(JSON.stringify(message) + "\n")

// What the tool prints must not corrupt the protocol: stdout and stderr become Log messages.
const logWriter = (chunk, encoding, callback) => {
  const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8")
  const line = text.endsWith("\n") ? text.slice(0, -1) : text
  const current = invocation.getStore()
  send(current === undefined ? { _tag: "Log", line } : { _tag: "Log", line, invocationId: current.id })
  const done = typeof encoding === "function" ? encoding : callback
  if (typeof done === "function") queueMicrotask(done)
  return true
}
stdout.write = logWriter
process.stderr.write = logWriter

const ToolExecutionMode = Object.freeze({ Parallel: "parallel", Serial: "serial" })

const tool = (definition, handler) => {
  if (typeof definition !== "object" || definition === null) {
    throw new TypeError("tool(definition, handler): definition must be an object { description, guidelines, parameters }")
  }
  if (typeof handler !== "function") throw new TypeError("tool(definition, handler): handler must be a function")
  return Object.freeze({ [TOOL]: true, definition, handler })
}

// The type name and message of a thrown value, read as core's ThrownValue reads them in process,
// so a failure is classified the same in both execution modes.
const errorType = (thrown) => {
  try {
    if (typeof thrown === "object" && thrown !== null) {
      if (thrown._tag === "ToolFailure" && typeof thrown.errorType === "string") return thrown.errorType
      const tag = thrown._tag
      if (typeof tag === "string" && tag !== "") return tag
      if (thrown instanceof Error) {
        const name = thrown.name
        if (typeof name === "string" && name !== "" && name !== "Error") return name
        return thrown.constructor?.name || "Error"
      }
      return thrown.constructor?.name || "Object"
    }
    return thrown === null ? "null" : typeof thrown
  } catch {
    return "Unknown"
  }
}
const errorMessage = (thrown) => {
  try {
    return thrown instanceof Error ? String(thrown.message) : String(thrown)
  } catch {
    return "(the thrown value could not be formatted)"
  }
}

let nextRequest = 0
const calls = new Map()
// Ids of the invocations in flight: a nested call from any other is refused here.
const running = new Set()

const toolCallError = (type, message) => {
  const error = new Error(message)
  error.name = type
  return error
}

const harness = Object.freeze({
  callTool(name, args = {}) {
    const current = invocation.getStore()
    if (current === undefined || !running.has(current.id)) {
      return Promise.reject(
        toolCallError(
          "ToolRejected",
          `harness.callTool('${name}') ran outside a tool invocation (at module load, or after the call ended)`
        )
      )
    }
    if (typeof name !== "string") return Promise.reject(new TypeError("harness.callTool(name, args): name must be a string"))
    let json
    try {
      json = JSON.stringify(args ?? {})
    } catch (error) {
      return Promise.reject(error)
    }
    if (json.length > MAX_PAYLOAD_BYTES / 3 && Buffer.byteLength(json, "utf8") > MAX_PAYLOAD_BYTES) {
      return Promise.reject(toolCallError("InputTooLarge", `arguments of '${name}' exceed ${MAX_PAYLOAD_BYTES} bytes of JSON`))
    }
    const requestId = String(++nextRequest)
    return new Promise((resolve, reject) => {
      calls.set(requestId, { resolve, reject })
      rawWrite(
        `{"_tag":"CallTool","requestId":"${requestId}","invocationId":${JSON.stringify(current.id)},"name":${JSON.stringify(name)},"args":${json}}\n`
      )
    })
  },
  get callId() {
    return invocation.getStore()?.callId
  },
  get depth() {
    return invocation.getStore()?.depth
  }
})

globalThis[Symbol.for("jitbox.sandbox.runtime")] = Object.freeze({ tool, ToolExecutionMode, harness })

let entry

// The file a load error comes from: the first bundle frame of its stack, mapped back through the
// "// jitbox:<path>" header esbuild writes above each module of the bundle.
const pathFromStack = async (error) => {
  const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : ""
  const frame = /tool\.mjs:(\d+):\d+/.exec(stack)
  if (frame === null) return undefined
  const { readFileSync } = await import("node:fs")
  const lines = readFileSync(new URL("./tool.mjs", import.meta.url), "utf8").split("\n")
  for (let i = Number(frame[1]) - 1; i >= 0; i--) {
    const header = /^\/\/ jitbox:(.+)$/.exec(lines[i] ?? "")
    if (header !== null) return header[1]
  }
  return undefined
}

const load = async (message) => {
  let module
  try {
    module = await import("./tool.mjs")
  } catch (error) {
    const path = await pathFromStack(error).catch(() => undefined)
    const detail = `${errorType(error)}: ${errorMessage(error)}`
    return send(path === undefined ? { _tag: "LoadFailed", reason: "ActivationError", detail } : { _tag: "LoadFailed", reason: "ActivationError", path, detail })
  }
  const name = message.entrypoint
  if (!Object.prototype.hasOwnProperty.call(module, name)) {
    const exported = Object.keys(module)
    return send({
      _tag: "LoadFailed",
      reason: "MissingEntrypoint",
      detail: `the entry file exports no '${name}'${exported.length > 0 ? ` (it exports: ${exported.join(", ")})` : ""}`
    })
  }
  const value = module[name]
  if (typeof value !== "object" || value === null || value[TOOL] !== true) {
    return send({
      _tag: "LoadFailed",
      reason: "EntrypointNotATool",
      detail: `'${name}' is ${typeof value === "function" ? "a plain function" : typeof value}, not a tool(...) value`
    })
  }
  entry = value
  const d = value.definition
  const metadata = {}
  if (d.description !== undefined) metadata.description = String(d.description)
  if (d.guidelines !== undefined) metadata.guidelines = String(d.guidelines)
  if (d.parameters !== undefined) {
    if (typeof d.parameters !== "object" || d.parameters === null || Array.isArray(d.parameters)) {
      return send({ _tag: "LoadFailed", reason: "ActivationError", detail: `'${name}': parameters must be a JSON Schema object` })
    }
    metadata.parameters = JSON.parse(JSON.stringify(d.parameters))
  }
  if (d.executionMode !== undefined) metadata.executionMode = d.executionMode
  send({ _tag: "Loaded", metadata })
}

const cpuMs = () => {
  const usage = process.cpuUsage()
  return Math.round((usage.user + usage.system) / 1000)
}

// Reading the process CPU time is a system call (about 4 µs here, a sizeable part of a warm call):
// a Result carries cpuMs at most every CPU_REPORT_MS of wall time (a Failed always does), as the
// Python runner's do. The host retires a child at half its CPU rlimit, so reporting a quarter of a
// second late cannot let it reach the limit.
const CPU_REPORT_MS = 250
let cpuReportedAt = -Infinity
const cpuField = () => {
  const now = performance.now()
  if (now - cpuReportedAt < CPU_REPORT_MS) return ""
  cpuReportedAt = now
  return `,"cpuMs":${cpuMs()}`
}

const fail = (id, error) => {
  running.delete(id)
  const nested = error !== null && typeof error === "object" ? error.jitboxRequestId : undefined
  const info = { type: errorType(error), message: errorMessage(error) }
  send({ _tag: "Failed", invocationId: id, error: nested === undefined ? info : { ...info, nestedRequestId: nested }, cpuMs: cpuMs() })
}

const reply = (id, value) => {
  running.delete(id)
  let json
  try {
    json = JSON.stringify(value === undefined ? null : value)
    if (json === undefined) throw new TypeError(`the tool returned a ${typeof value}, which is not JSON`)
  } catch (error) {
    return fail(id, error)
  }
  if (json.length > MAX_PAYLOAD_BYTES / 3 && Buffer.byteLength(json, "utf8") > MAX_PAYLOAD_BYTES) {
    return fail(id, toolCallError("OutputTooLarge", `the result exceeds ${MAX_PAYLOAD_BYTES} bytes of JSON`))
  }
  rawWrite(`{"_tag":"Result","invocationId":${JSON.stringify(id)}${cpuField()},"value":${json}}\n`)
}

const quiet = new AbortController().signal

const invoke = (message) => {
  const id = message.invocationId
  const store = {
    id,
    callId: message.callId,
    depth: message.depth,
    toolName: message.toolName,
    // always a signal, as in process; the host cancels by killing the process group, so it never fires here
    signal: quiet,
    callTool: (name, args) => harness.callTool(name, args)
  }
  running.add(id)
  let result
  try {
    result = invocation.run(store, entry.handler, message.args, store)
  } catch (error) {
    return fail(id, error)
  }
  // a handler that answers synchronously skips the promise machinery
  if (typeof result?.then !== "function") return reply(id, result)
  result.then((value) => reply(id, value), (error) => fail(id, error))
}

const settleCall = (message) => {
  const pending = calls.get(message.requestId)
  if (pending === undefined) return
  calls.delete(message.requestId)
  if (message.ok) pending.resolve(message.value)
  else {
    const error = toolCallError(message.error?.type ?? "Error", message.error?.message ?? "nested call failed")
    error.jitboxRequestId = message.requestId
    pending.reject(error)
  }
}

const handle = (line) => {
  const message = JSON.parse(line)
  switch (message._tag) {
    case "Invoke":
      return invoke(message)
    case "CallResult":
      return settleCall(message)
    case "Load":
      return void load(message)
  }
}

let buffered = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffered += chunk
  let newline
  while ((newline = buffered.indexOf("\n")) !== -1) {
    const line = buffered.slice(0, newline)
    buffered = buffered.slice(newline + 1)
    handle(line)
  }
})
process.stdin.on("end", () => process.exit(0))
