/**
 * What the application reads of a toolbox (APP-01..07): catalog entries, complete definitions
 * and sources, and the definitions a model provider receives. Complete and unbudgeted, unlike the
 * model's management tools, which read the same model through pages.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { JsonSchema } from "./JsonSchema.js"

/** @since 0.1.0 @category models */
export type ToolState = "loaded" | "unloaded" | "unbound"

/** One entry of the catalog. @since 0.1.0 @category schemas */
export const CatalogEntry = Schema.Struct({
  name: Schema.String,
  origin: Schema.Literal("base", "code", "text"),
  state: Schema.Literal("loaded", "unloaded", "unbound"),
  description: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category models */
export type CatalogEntry = typeof CatalogEntry.Type

/** Complete metadata and schema of a tool (APP-02). @since 0.1.0 @category models */
export interface ToolDefinitionInfo extends CatalogEntry {
  readonly guidelines: string | null
  readonly parameters: JsonSchema | null
  readonly execution_mode: "parallel" | "serial"
  readonly language?: string
  readonly entrypoint?: string
  readonly version_id?: string
  readonly files?: ReadonlyArray<{ readonly path: string; readonly chars: number }>
}

/** The complete retained source of a code or text tool (APP-03). @since 0.1.0 @category models */
export type ToolSource =
  | {
    readonly name: string
    readonly kind: "code"
    readonly language: string
    readonly entrypoint: string
    readonly entry_file: string
    readonly files: Readonly<Record<string, string>>
  }
  | { readonly name: string; readonly kind: "text"; readonly markdown: string }

/** A tool as a model provider receives it. @since 0.1.0 @category models */
export interface ModelToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly executionMode: "parallel" | "serial"
  readonly origin: "base" | "code" | "text" | "management"
  readonly guidelines: string | null
}
