/**
 * Builds one new version of a code or text tool without installing it: the policy's budgets are
 * checked first, the package is activated in its runner, the module's declarations are checked as
 * a tool contract, and the examples run against the new activation. Whatever fails releases the
 * activation, so the installed version stays as it was (UNL-09, PKG-09).
 */
import { isDeepStrictEqual } from "node:util"
import type { AdmissionShape } from "../Admission.js"
import * as CodePackage from "../CodePackage.js"
import type { CallHost, CodeRunnerShape } from "../CodeRunner.js"
import { PackageError } from "../HarnessError.js"
import * as Paging from "../Paging.js"
import { checkContract } from "../Tool.js"
import type { ToolExample } from "../ToolRequest.js"
import type { CodeLanguage } from "../ToolOrigin.js"
import type { CodeVersion, TextVersion } from "./registry.js"

export interface CodeVersionRequest {
  readonly name: string
  readonly language: CodeLanguage
  readonly entrypoint: string
  readonly files: Readonly<Record<string, string>>
  readonly declared: CodeVersion["declared"]
  readonly examples: ReadonlyArray<ToolExample> | undefined
  /** Whether the version replaces another (a repair); `null` for a snapshot restore, which spends nothing. */
  readonly repair: boolean | null
  readonly duration: "short" | "long"
  /** Said in a compile error: the request named no language, so this one was assumed. */
  readonly languageAssumed?: boolean
}

/** Runs one example invocation of a version that is not installed yet, inside the change that builds it. */
export type ExampleRunner = (version: CodeVersion, name: string, input: unknown) => Promise<unknown>

const sameJson = (actual: unknown, expected: unknown): boolean => {
  try {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(actual) ?? "null"), JSON.parse(JSON.stringify(expected) ?? "null"))
  } catch {
    return false
  }
}

const describe = (cause: unknown): string => cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)

export class VersionBuilder {
  private activations = 0

  constructor(
    private readonly runner: CodeRunnerShape,
    private readonly host: CallHost,
    private readonly admission: AdmissionShape,
    private readonly activationPrefix: string,
    private readonly runExample: ExampleRunner
  ) {}

  text(name: string, markdown: string, description: string): TextVersion {
    if (markdown.length > CodePackage.maxFileChars && Paging.pageable(markdown).totalChars > CodePackage.maxFileChars) {
      throw new PackageError({ name, reason: "FileTooLarge", detail: `a text tool holds at most ${CodePackage.maxFileChars} characters` })
    }
    return {
      versionId: CodePackage.versionId({ kind: "text", files: { "SKILL.md": markdown }, description }),
      description,
      body: Paging.pageable(markdown)
    }
  }

  async code(request: CodeVersionRequest): Promise<CodeVersion> {
    const { declared, entrypoint, examples, files, language, name, repair } = request
    if (repair !== null) {
      this.admission.checkVersion({ name, language, duration: request.duration, repair, examples: examples?.length ?? 0 })
    }
    if (!this.runner.languages.includes(language)) {
      throw new PackageError({ name, reason: "NoRunner", detail: `no runner for ${language} on this host` })
    }
    const entryFile = CodePackage.entryFile(language)
    const versionId = CodePackage.versionId({ kind: "code", language, entrypoint, files, ...declared })
    const activationId = `${this.activationPrefix}${(++this.activations).toString(36)}`
    let metadata
    try {
      metadata = await this.runner.activate(
        { sessionId: this.host.sessionId, activationId, toolName: name, versionId, language, entrypoint, entryFile, files },
        this.host
      )
    } catch (cause) {
      if (request.languageAssumed === true && cause instanceof PackageError && cause.reason === "CompileError") {
        throw new PackageError({
          name: cause.name,
          reason: cause.reason,
          ...(cause.path === undefined ? {} : { path: cause.path }),
          detail: `${cause.detail} (no language was given, so ${language} was assumed; name another with language: "python", "bash" or "javascript")`
        })
      }
      throw cause
    }
    const runner = this.runner
    try {
      const description = metadata.description ?? declared.description
      const guidelines = metadata.guidelines ?? declared.guidelines
      const { parameters, validate } = checkContract({ description, guidelines, parameters: metadata.parameters ?? declared.parameters })
      const version: CodeVersion = {
        versionId,
        activationId,
        runner,
        language,
        entrypoint,
        entryFile,
        files,
        description: description!,
        guidelines: guidelines!,
        parameters,
        executionMode: metadata.executionMode ?? "parallel",
        duration: request.duration,
        validate,
        declared,
        examples: examples ?? [],
        inflight: 0,
        retired: false
      }
      // a restored version keeps the examples it passed when it was built, without running them again
      if (repair !== null) for (const [index, example] of (examples ?? []).entries()) await this.example(name, version, index, example, true)
      if (repair !== null) this.admission.commitVersion(repair)
      return version
    } catch (cause) {
      await runner.release(activationId)
      throw cause
    }
  }

  private async example(tool: string, version: CodeVersion, index: number, example: ToolExample, spends: boolean): Promise<void> {
    const name = `example ${index + 1}`
    const problems = version.validate(example.input)
    if (problems !== undefined) {
      throw new PackageError({ name: tool, reason: "ExampleFailed", detail: `${name}: invalid input: ${problems}` })
    }
    if (spends) this.admission.trySpendInvocation()
    let actual: unknown
    try {
      actual = await this.runExample(version, tool, example.input)
    } catch (cause) {
      throw new PackageError({ name: tool, reason: "ExampleFailed", detail: `${name} threw ${describe(cause)}` })
    }
    if (!sameJson(actual, example.expected_output)) {
      throw new PackageError({
        name: tool,
        reason: "ExampleFailed",
        detail: `${name} returned ${JSON.stringify(actual)}, expected ${JSON.stringify(example.expected_output)}`
      })
    }
  }

}
