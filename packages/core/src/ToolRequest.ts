/**
 * The create and update requests, shared by the model-facing management tools (snake_case on the
 * wire) and the application API: every field is a single word, so one shape serves both.
 *
 * @since 0.1.0
 */
import type { JsonSchema } from "./JsonSchema.js"
import type { CodeLanguage } from "./ToolOrigin.js"

/** @since 0.1.0 @category models */
export const ToolKind = { Code: "code", Text: "text" } as const

/** @since 0.1.0 @category models */
export type ToolKind = typeof ToolKind[keyof typeof ToolKind]

/** An input and the output the tool must return for it, compared by JSON deep equality. @since 0.1.0 @category models */
export interface ToolExample {
  readonly input: { readonly [key: string]: unknown }
  readonly expected_output: unknown
}

/** @since 0.1.0 @category models */
export interface CreateToolRequest {
  readonly source: string
  readonly kind?: ToolKind | undefined
  readonly name?: string | undefined
  readonly entrypoint?: string | undefined
  readonly description?: string | undefined
  readonly language?: CodeLanguage | undefined
  readonly files?: Readonly<Record<string, string>> | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly examples?: ReadonlyArray<ToolExample> | undefined
  /** 003's duration class (JT-CTR-02): a `long` tool needs a policy that allows long-running tools and gets its long timeout. */
  readonly duration?: "short" | "long" | undefined
}

/** @since 0.1.0 @category models */
export interface UpdateToolRequest {
  readonly name: string
  readonly kind?: ToolKind | undefined
  readonly source?: string | undefined
  readonly markdown?: string | undefined
  readonly files?: Readonly<Record<string, string>> | undefined
  readonly remove?: ReadonlyArray<string> | undefined
  readonly entrypoint?: string | undefined
  readonly language?: CodeLanguage | undefined
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly examples?: ReadonlyArray<ToolExample> | undefined
  readonly duration?: "short" | "long" | undefined
}

/** What state-changing tools answer: nothing but the name and the status (MGMT-17, D-07). @since 0.1.0 @category models */
export interface ToolAck {
  readonly name: string
  readonly status: "loaded" | "unloaded"
}
