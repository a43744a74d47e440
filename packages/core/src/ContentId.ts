/**
 * `content_id` (D-06): the first 16 hex digits of SHA-256 of the exact content being paged.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"

/** @since 0.1.0 @category constructors */
export const of = (content: string): string => createHash("sha256").update(content, "utf8").digest("hex").slice(0, 16)
