/**
 * Measurements of one attempt (MEAS-01..07): compact-JSON code points of the arguments, plain
 * length of text output, compact JSON of structured output, text blocks only of multimodal output;
 * all capped at 8,000 (a reported 8,000 means "at least"); `null` where nothing was measured.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import * as JsonLength from "./JsonLength.js"
import * as ResponseBudget from "./ResponseBudget.js"

/** A result made of content blocks; only text blocks count as output characters (MEAS-03). @since 0.1.0 @category models */
export class MultimodalResult {
  readonly _tag = "MultimodalResult"
  constructor(
    readonly blocks: ReadonlyArray<
      | { readonly type: "text"; readonly text: string }
      | { readonly type: "image"; readonly data?: string; readonly url?: string; readonly mimeType?: string }
    >
  ) {}
}

/** @since 0.1.0 @category constructors */
export const multimodal = (blocks: MultimodalResult["blocks"]): MultimodalResult => new MultimodalResult(blocks)

const cap = ResponseBudget.maxChars

/** @since 0.1.0 @category measuring */
export const input = (args: unknown): number | null => JsonLength.measure(args, cap)

/** @since 0.1.0 @category measuring */
export const output = (result: unknown): number | null => {
  if (typeof result === "string") return CodePoints.count(result, cap)
  if (result === undefined) return null
  if (result instanceof MultimodalResult) {
    let total = 0
    for (const block of result.blocks) {
      if (block.type === "text") total += CodePoints.count(block.text, cap - total)
      if (total >= cap) break
    }
    return total
  }
  return input(result)
}

/** @since 0.1.0 @category measuring */
export const message = (text: string | null): number | null => text === null ? null : CodePoints.count(text, cap)

/** Uncapped code points of a source file, as `inspect_tool` lists them (PKG-07). @since 0.1.0 @category measuring */
export const sourceChars = (text: string): number => CodePoints.count(text)
