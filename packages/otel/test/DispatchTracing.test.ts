/**
 * Spans of one process, made with the real SDK (a `BasicTracerProvider` exporting to its
 * in-memory exporter): composed calls inside one harness nest under the call that composed them
 * though they finish first, a rejected call is an error span, the header codec bounds what it
 * reads, and the metrics count calls by tool and status.
 */
import { describe, expect, it } from "vitest"
import { JitHarness, tool } from "@jitbox/core"
import { DispatchTracing, Propagation } from "@jitbox/otel"
import * as Api from "@opentelemetry/api"
import { hrTimeToMilliseconds } from "@opentelemetry/core"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Metric from "effect/Metric"

const innerSource = `export const inner = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => { await new Promise((resolve) => setTimeout(resolve, 5)); return value * 2 })`

const outerSource = `export const outer = tool({
  description: "Doubles twice.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("inner", { value: await harness.callTool("inner", { value }) }))`

const traced = (options?: { readonly baseToolsRecorded?: boolean }) => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const tracing = DispatchTracing.make({ tracer: provider.getTracer("test"), ...options })
  return { exporter, tracing }
}

describe("DispatchTracing in one process", () => {
  it("composed calls are children of the call that composed them, made once each, with start before end", async () => {
    const { exporter, tracing } = traced()
    const harness = new JitHarness({ sessionId: "local", eventSink: tracing.eventSink, profileSink: tracing.profileSink, maxCallDepth: 2 })
    await harness.createTool({ entrypoint: "inner", language: "javascript", source: innerSource })
    await harness.createTool({ entrypoint: "outer", language: "javascript", source: outerSource })
    expect(await harness.callTool("outer", { value: 3 })).toBe(12)
    const spans = exporter.getFinishedSpans()
    const outer = spans.filter((span) => span.name === "execute_tool outer")
    const inner = spans.filter((span) => span.name === "execute_tool inner")
    expect([outer.length, inner.length]).toEqual([1, 2])
    expect(outer[0]!.parentSpanContext).toBeUndefined()
    for (const span of inner) {
      expect(span.parentSpanContext?.spanId).toBe(outer[0]!.spanContext().spanId)
      expect(span.spanContext().traceId).toBe(outer[0]!.spanContext().traceId)
      expect(span.attributes["jitbox.call.parent_id"]).toBe(outer[0]!.attributes["gen_ai.tool.call.id"])
      expect(span.attributes["jitbox.call.depth"]).toBe(2)
      expect(hrTimeToMilliseconds(span.startTime)).toBeGreaterThanOrEqual(hrTimeToMilliseconds(outer[0]!.startTime))
      expect(hrTimeToMilliseconds(span.endTime)).toBeLessThanOrEqual(hrTimeToMilliseconds(outer[0]!.endTime))
    }
    await harness.release()
  })

  it("a rejected call is an error span with its error type; calls are counted by tool and status", async () => {
    const { exporter, tracing } = traced()
    const harness = new JitHarness({ sessionId: "rejecting", eventSink: tracing.eventSink, profileSink: tracing.profileSink, maxCallDepth: 1 })
    await harness.createTool({ entrypoint: "inner", language: "javascript", source: innerSource })
    await harness.createTool({ entrypoint: "outer", language: "javascript", source: outerSource })
    await expect(harness.callTool("outer", { value: 1 })).rejects.toMatchObject({ _tag: "ToolRejected" })
    const inner = exporter.getFinishedSpans().find((span) => span.name === "execute_tool inner")!
    const outer = exporter.getFinishedSpans().find((span) => span.name === "execute_tool outer")!
    expect(inner.attributes["jitbox.call.status"]).toBe("rejected")
    expect(inner.attributes["error.type"]).toBe("ToolRejected")
    expect(inner.status.code).toBe(Api.SpanStatusCode.ERROR)
    expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId)
    expect(outer.attributes["jitbox.call.status"]).toBe("failed")
    const counted = Metric.unsafeSnapshot().filter((pair) =>
      pair.metricKey.name === "jitbox.calls" &&
      pair.metricKey.tags.some((tag) => tag.key === "gen_ai.tool.name" && tag.value === "inner") &&
      pair.metricKey.tags.some((tag) => tag.key === "jitbox.call.status" && tag.value === "rejected")
    )
    expect(counted.map((pair) => (pair.metricState as unknown as { count: number }).count)).toEqual([1])
    await harness.release()
  })

  it("a call a base tool composed is its child (the base tool's span is made from its record), or a root when base tools are not recorded", async () => {
    const { exporter, tracing } = traced()
    const viaBase = tool({ name: "via_base", description: "Calls inner.", guidelines: "Use in tests." }, (_args: unknown, context) =>
      context.callTool("inner", { value: 1 }))
    const harness = new JitHarness({ sessionId: "base", tools: [viaBase], eventSink: tracing.eventSink, profileSink: tracing.profileSink })
    await harness.createTool({ entrypoint: "inner", language: "javascript", source: innerSource })
    expect(await harness.callTool("via_base", {})).toBe(2)
    const spans = exporter.getFinishedSpans()
    expect(spans.map((span) => span.name)).toEqual(["execute_tool via_base", "execute_tool inner"])
    expect(spans[1]!.parentSpanContext?.spanId).toBe(spans[0]!.spanContext().spanId)
    expect(spans[0]!.attributes["jitbox.tool.origin"]).toBe("base")
    await harness.release()

    const unrecorded = traced({ baseToolsRecorded: false })
    const quiet = new JitHarness({
      sessionId: "quiet",
      tools: [viaBase],
      manageBaseTools: false,
      eventSink: unrecorded.tracing.eventSink,
      profileSink: unrecorded.tracing.profileSink
    })
    await quiet.createTool({ entrypoint: "inner", language: "javascript", source: innerSource })
    expect(await quiet.callTool("via_base", {})).toBe(2)
    const alone = unrecorded.exporter.getFinishedSpans()
    expect(alone.map((span) => span.name)).toEqual(["execute_tool inner"])
    expect(alone[0]!.parentSpanContext).toBeUndefined()
    await quiet.release()
  })
})

describe("Propagation", () => {
  const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

  it("reads a W3C traceparent and tracestate, and writes them back for a span", () => {
    const context = Propagation.extract({ traceparent, tracestate: "rojo=00f067aa0ba902b7" })!
    const parent = Api.trace.getSpanContext(context)!
    expect([parent.traceId, parent.spanId, parent.isRemote]).toEqual(["0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true])
    expect(parent.traceState?.get("rojo")).toBe("00f067aa0ba902b7")
    const { tracing } = traced()
    const trace = tracing.traceContext.startInvocation({ traceparent }, {
      workerId: "w",
      sessionId: "s",
      toolName: "t",
      callId: "c",
      parentCallId: null,
      depth: 1
    })
    expect(trace.headers?.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/)
    trace.end("ok", null)
  })

  it("ignores what it cannot trust: no header, garbage, an all-zero id, an oversized traceparent or tracestate", () => {
    expect(Propagation.extract({})).toBeUndefined()
    expect(Propagation.extract({ traceparent: "nonsense" })).toBeUndefined()
    expect(Propagation.extract({ traceparent: "00-00000000000000000000000000000000-b7ad6b7169203331-01" })).toBeUndefined()
    expect(Propagation.extract({ traceparent: `${traceparent}${" ".repeat(Propagation.limits.traceparent)}` })).toBeUndefined()
    const state = Api.trace.getSpanContext(Propagation.extract({ traceparent, tracestate: `a=${"b".repeat(Propagation.limits.tracestate)}` })!)!
    expect(state.traceState).toBeUndefined()
  })
})
