/**
 * Typed errors of the harness. Each is a `Schema.TaggedError`, so it can cross a subject and be
 * decoded on the other side; its `_tag` is the `error_type` that profiles and the error cache record.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A name no registry of this harness knows. @since 0.1.0 @category errors */
export class ToolNotFound extends Schema.TaggedError<ToolNotFound>()("ToolNotFound", {
  name: Schema.String,
  /** The session's tool names nearest to `name` (at most three), when some are close: a slip of the caller's. */
  suggestions: Schema.optional(Schema.Array(Schema.String))
}) {
  override get message(): string {
    const near = this.suggestions ?? []
    const hint = near.length === 0 ? "" : `; did you mean ${near.map((name) => `'${name}'`).join(", ")}?`
    return `no tool named '${this.name}' exists in this harness${hint}`
  }
}

/** Why the harness refused a call before any handler ran (status `rejected`). @since 0.1.0 @category models */
export const RejectionReason = Schema.Literal(
  "Unloaded",
  "MissingBinding",
  "DepthExceeded",
  "NoActiveInvocation",
  "BudgetExhausted",
  "NotAdmitted",
  "DuplicateCall"
)

/** @since 0.1.0 @category errors */
export class ToolRejected extends Schema.TaggedError<ToolRejected>()("ToolRejected", {
  name: Schema.String,
  reason: RejectionReason,
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** Arguments that do not satisfy the tool's JSON Schema (status `failed`, D-11). @since 0.1.0 @category errors */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  name: Schema.String,
  issues: Schema.String
}) {
  override get message(): string {
    return `invalid arguments for '${this.name}': ${this.issues}`
  }
}

/** A `tool(...)` definition that breaks the tool contract (CON-04). @since 0.1.0 @category errors */
export class ToolDefinitionError extends Schema.TaggedError<ToolDefinitionError>()("ToolDefinitionError", {
  reason: Schema.Literal("MissingDescription", "EmptyGuidelines", "InvalidParameters", "MissingName", "InvalidName"),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** A code package that cannot become a version: bad paths, limits, compile or activation errors. @since 0.1.0 @category errors */
export class PackageError extends Schema.TaggedError<PackageError>()("PackageError", {
  name: Schema.String,
  reason: Schema.Literal(
    "InvalidPath",
    "TooManyFiles",
    "FileTooLarge",
    "SourceTooLarge",
    "MissingFile",
    "MissingEntrypoint",
    "EntrypointNotATool",
    "CompileError",
    "ImportError",
    "ActivationError",
    "NoRunner",
    "ExampleFailed"
  ),
  path: Schema.optional(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** A name that belongs to a management tool, a base tool or an existing tool. @since 0.1.0 @category errors */
export class NameConflict extends Schema.TaggedError<NameConflict>()("NameConflict", {
  name: Schema.String,
  reason: Schema.Literal("Reserved", "BaseTool", "Exists")
}) {
  override get message(): string {
    switch (this.reason) {
      case "Reserved":
        return `'${this.name}' is a reserved management tool name`
      case "BaseTool":
        return `'${this.name}' is an application base tool and cannot be created, updated or replaced`
      case "Exists":
        return `a tool named '${this.name}' already exists; use update_tool to change it`
    }
  }
}

/** A management request whose fields do not fit the tool it names. @since 0.1.0 @category errors */
export class InvalidToolRequest extends Schema.TaggedError<InvalidToolRequest>()("InvalidToolRequest", {
  name: Schema.optional(Schema.String),
  reason: Schema.Literal(
    "KindChange",
    "FieldNotAllowed",
    "MissingField",
    "BaseToolNotManaged",
    "NoSource",
    "OffsetOutOfRange",
    "OutOfRange",
    "UnknownPath",
    "UnknownInvocation"
  ),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** A change or call the harness's policy does not allow (JT-POL, JT-CFG-06). @since 0.1.0 @category errors */
export class PolicyViolation extends Schema.TaggedError<PolicyViolation>()("PolicyViolation", {
  name: Schema.String,
  reason: Schema.Literal(
    "LanguageNotAllowed",
    "ToolBudgetExhausted",
    "RepairBudgetExhausted",
    "InvocationBudgetExhausted",
    "LongRunningNotAllowed",
    "AsyncOperationsNotAllowed",
    "ConcurrencyLimit",
    "ConsentRequired",
    "LeaseExpired",
    "RootCoordinatorRequired",
    "NotAdmitted"
  ),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** A call that ran past its timeout (status `failed`). @since 0.1.0 @category errors */
export class ToolTimeout extends Schema.TaggedError<ToolTimeout>()("ToolTimeout", {
  name: Schema.String,
  seconds: Schema.Number
}) {
  override get message(): string {
    return `'${this.name}' did not finish within ${this.seconds} s and was stopped`
  }
}

/** A harness option outside its range (D-16). @since 0.1.0 @category errors */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  option: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.option}: ${this.detail}`
  }
}

/** The awaiting caller gave up on the call (status `cancelled`). @since 0.1.0 @category errors */
export class ToolCancelled extends Schema.TaggedError<ToolCancelled>()("ToolCancelled", {
  name: Schema.String,
  callId: Schema.String
}) {
  override get message(): string {
    return `call ${this.callId} of '${this.name}' was cancelled`
  }
}

/**
 * A value thrown by a tool's own code, carried into the Effect API's error channel or across a
 * process boundary. Its `name` is the type name the thrown value had where it was thrown
 * (`ValueError`, `TypeError`, ...), as it would be had the tool run in process.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  toolName: Schema.String,
  errorType: Schema.String,
  detail: Schema.NullOr(Schema.String),
  cause: Schema.Unknown
}) {
  override get name(): string {
    return this.errorType
  }

  override get message(): string {
    return this.detail ?? `'${this.toolName}' failed with ${this.errorType}`
  }
}

/** A call or change on a harness after `release()`: a released harness answers nothing else. @since 0.1.0 @category errors */
export class HarnessReleased extends Schema.TaggedError<HarnessReleased>()("HarnessReleased", {
  sessionId: Schema.String,
  operation: Schema.String
}) {
  override get message(): string {
    return `the harness of session '${this.sessionId}' was released; ${this.operation} is refused`
  }
}

/** Every error the harness itself raises. @since 0.1.0 @category errors */
export type HarnessError =
  | ToolNotFound
  | ToolRejected
  | ValidationError
  | ToolDefinitionError
  | PackageError
  | NameConflict
  | InvalidToolRequest
  | ConfigError
  | ToolCancelled
  | PolicyViolation
  | ToolTimeout
  | HarnessReleased

/** @since 0.1.0 @category refinements */
export const isHarnessError = (u: unknown): u is HarnessError =>
  typeof u === "object" && u !== null && "_tag" in u && harnessErrorTags.has((u as { _tag: unknown })._tag as string)

/**
 * Whether `name` is the tag of an error the harness itself raises. A tool running in another
 * process reports its failures by type name; such a name is not the harness's to claim.
 *
 * @since 0.1.0 @category refinements
 */
export const isHarnessErrorTag = (name: string): boolean => harnessErrorTags.has(name)

const harnessErrorTags = new Set<string>([
  "ToolNotFound",
  "ToolRejected",
  "ValidationError",
  "ToolDefinitionError",
  "PackageError",
  "NameConflict",
  "InvalidToolRequest",
  "ConfigError",
  "ToolCancelled",
  "PolicyViolation",
  "ToolTimeout",
  "HarnessReleased"
])
