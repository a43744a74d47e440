/**
 * @since 0.1.0
 */
export * as BashRunner from "./BashRunner.js"

/**
 * @since 0.1.0
 */
export * as CSharpRunner from "./CSharpRunner.js"

/**
 * @since 0.1.0
 */
export * as Isolation from "./Isolation.js"

/**
 * @since 0.1.0
 */
export * as NodeRunner from "./NodeRunner.js"

/**
 * @since 0.1.0
 */
export * as Protocol from "./Protocol.js"

/**
 * @since 0.1.0
 */
export * as PythonRunner from "./PythonRunner.js"

/**
 * @since 0.1.0
 */
export * as SandboxConfig from "./SandboxConfig.js"

/**
 * @since 0.1.0
 */
export * as SandboxError from "./SandboxError.js"

/**
 * @since 0.1.0
 */
export * as SandboxRunner from "./SandboxRunner.js"

/**
 * @since 0.1.0
 */
export * as ToolError from "./ToolError.js"

/**
 * @since 0.1.0
 */
export * as WarmPool from "./WarmPool.js"

/**
 * How a child is launched (prlimit, bubblewrap, seccomp, uid, scrubbed environment), for a caller
 * measuring the sandbox's floor with a child of its own (@jitbox/bench's raw echo child).
 *
 * @since 0.1.0
 */
export * as Spawn from "./internal/spawn.js"
