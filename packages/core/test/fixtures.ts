/**
 * Shared fixtures of the core test suite: the reference's `add` base tool and `twice` code tool
 * (CON-22), helpers to read a harness's event feed and to hold a call open without sleeping.
 */
import { JitHarness, type JitHarnessOptions } from "../src/JitHarness.js"
import type { JitToolEvent } from "../src/JitToolEvent.js"
import { tool } from "../src/Tool.js"

export const intPair = {
  type: "object",
  properties: { left: { type: "integer" }, right: { type: "integer" } },
  required: ["left", "right"],
  additionalProperties: false
} as const

/** The reference's base tool. */
export const add = tool(
  { name: "add", description: "Add two integers.", guidelines: "Use for integer addition.", parameters: intPair },
  ({ left, right }: { left: number; right: number }) => left + right
)

/** `twice` as the reference writes it, in TypeScript: it composes `add` (CON-22, D-24). */
export const twiceSource = `
export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => await harness.callTool("add", { left: value, right: value }))
`

/** The same tool in JavaScript. */
export const twiceJsSource = `
export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

/** A one-export module whose tool returns `body` (a JS expression, evaluated per call). */
export const codeTool = (name: string, body: string, extra = ""): string =>
  `${extra}
export const ${name} = tool({ description: "Tool ${name}.", guidelines: "Use in tests." }, async (args, context) => ${body})
`

/** Options a test project sets for every harness (the sandboxed project: a subprocess runner). */
export const modeOptions = (): JitHarnessOptions =>
  (globalThis as { __jitboxTestHarnessOptions?: JitHarnessOptions }).__jitboxTestHarnessOptions ?? {}

export const makeHarness = (options: JitHarnessOptions = {}): JitHarness =>
  new JitHarness({ sessionId: "test", tools: [add], ...modeOptions(), ...options })

/** A harness whose toolbox knows base tool names without a binding (as a snapshot that names them leaves it). */
export const makeHarnessWithUnbound = async (names: ReadonlyArray<string>, options: JitHarnessOptions = {}): Promise<JitHarness> => {
  const harness = new JitHarness(
    { format_version: 1, tools: [], text_tools: [], base_tools: [...names], unloaded_tools: [] },
    { sessionId: "test", tools: [add], ...modeOptions(), ...options }
  )
  await harness.ready
  return harness
}

export const withTwice = async (options: JitHarnessOptions = {}): Promise<JitHarness> => {
  const harness = makeHarness(options)
  await harness.callTool("create_tool", { entrypoint: "twice", source: twiceSource })
  return harness
}

/** Records every event the harness emits from now on; `stop()` ends the subscription and returns them. */
export const recordEvents = (harness: JitHarness, bufferSize = 100_000) => {
  const subscription = harness.subscribe({ bufferSize })
  return {
    subscription,
    stop: async (): Promise<Array<JitToolEvent>> => {
      subscription.close()
      const events: Array<JitToolEvent> = []
      for await (const event of subscription) events.push(event)
      return events
    }
  }
}

/** A promise the test settles by hand, so a call can be held open without timers. */
export const deferred = <A = void>() => {
  let resolve!: (value: A) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<A>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Settles pending promise callbacks (no timers involved). */
export const flush = async (rounds = 5): Promise<void> => {
  for (let i = 0; i < rounds; i++) await Promise.resolve()
}

/** Awaits a rejection and returns what was thrown; fails if it resolved. */
export const rejection = async (pending: Promise<unknown>): Promise<any> => {
  let value: unknown
  try {
    value = await pending
  } catch (error) {
    return error
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
}

/** Code points of `text`. */
export const points = (text: string): number => Array.from(text).length

/** True when `text` has a high surrogate not followed by a low one, or a low one not preceded by a high one. */
export const hasSplitPair = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true
      i++
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return true
  }
  return false
}

/** Guards a next_offset walk: a walk that never ends fails instead of hanging. */
export const walkGuard = (limit = 10_000) => {
  let steps = 0
  return () => {
    if (++steps > limit) throw new Error(`next_offset did not reach null within ${limit} pages`)
  }
}
