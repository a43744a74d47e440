/**
 * @jitbox/core: the tool model and the harness in one process.
 *
 * Namespaces follow the module names; the names most programs need are also exported directly.
 *
 * @since 0.1.0
 */
export { type CodeExecution, JitHarness, type JitHarnessOptions, type MiddlewareCall } from "./JitHarness.js"
export type { Call, Middleware } from "./Call.js"
export { type BaseTools, type CallOptions, type Session as SessionShape, SessionDefinitions, SessionTool } from "./Session.js"
export { isToolDefinition, tool, ToolDefinition } from "./Tool.js"
export { CodeLanguages, type CodeLanguage, ToolCallStatus, ToolExecutionMode, ToolOrigin } from "./ToolOrigin.js"
export { ToolKind, type CreateToolRequest, type UpdateToolRequest, ToolAck } from "./ToolRequest.js"
export { InspectionToolExposure } from "./InspectionToolExposure.js"
export { multimodal, MultimodalResult } from "./Measure.js"

export * as Admission from "./Admission.js"
export * as AtomicFile from "./AtomicFile.js"
export * as CodeBundle from "./CodeBundle.js"
export * as CodePackage from "./CodePackage.js"
export * as CodePoints from "./CodePoints.js"
export * as CodeRunner from "./CodeRunner.js"
export * as ContentId from "./ContentId.js"
export * as ErrorCache from "./ErrorCache.js"
export * as EventFeed from "./EventFeed.js"
export * as EventSink from "./EventSink.js"
export * as Exposure from "./Exposure.js"
export * as Guidance from "./Guidance.js"
export * as Harness from "./Harness.js"
export * as HarnessClock from "./HarnessClock.js"
export * as HarnessError from "./HarnessError.js"
export * as JitHarnessProfile from "./JitHarnessProfile.js"
export * as JitHarnessSnapshot from "./JitHarnessSnapshot.js"
export * as JitPolicy from "./JitPolicy.js"
export * as AsyncInvocations from "./AsyncInvocations.js"
export * as CatalogTools from "./CatalogTools.js"
export * as JsonLength from "./JsonLength.js"
export * as JitToolEvent from "./JitToolEvent.js"
export * as JsonSchema from "./JsonSchema.js"
export * as ManagementTools from "./ManagementTools.js"
export * as NearestNames from "./NearestNames.js"
export * as Paging from "./Paging.js"

/**
 * @since 0.1.0
 */
export * as ParseIssues from "./ParseIssues.js"
export * as ParameterSchema from "./ParameterSchema.js"
export * as Profiler from "./Profiler.js"
export * as ProfileSink from "./ProfileSink.js"
export * as ResponseBudget from "./ResponseBudget.js"
export * as Session from "./Session.js"
export * as SharedCatalog from "./SharedCatalog.js"
export * as Sessions from "./Sessions.js"
export * as Slots from "./Slots.js"
export * as TextReader from "./TextReader.js"
export * as ThrownValue from "./ThrownValue.js"
export * as ToolCatalog from "./ToolCatalog.js"
export * as ToolContract from "./ToolContract.js"
export * as ToolErrorReport from "./ToolErrorReport.js"
export * as ToolRequest from "./ToolRequest.js"
export * as TrustedCodeRunner from "./TrustedCodeRunner.js"
