/**
 * The nats-server authorization of one namespace: a user per principal, each allowed only the
 * subjects its role uses, written as the `authorization { … }` block of a nats-server
 * configuration file (`jitbox auth config` prints it). The server enforces it; what it cannot
 * express, the runtime checks with capabilities (a worker's nested calls, package fetches and
 * cancels) and its own records.
 *
 * | principal | runs | may |
 * |---|---|---|
 * | `coordinator` | `jitbox coordinator` | serve `coordinator.*.*` (queue `coordinator`), read capacity reports, keep its ledger bucket |
 * | `operator` | `jitbox status`, `jitbox catalog` | ask the coordinator `leases`, `workers` and `policy` (as `operator`), service discovery, read the claims bucket, read the catalog and write its reviews (approve, revoke) |
 * | a session host | `jitbox sessions` | serve sessions (`session.*.*`, `sessions.activate` in queue `sessions`), send invocations and cancels to workers, admit, renew and release with the coordinator (as itself), publish events and profile records, keep the snapshot and claim buckets, read the catalog and publish to it (its entries and packages, not its reviews) |
 * | an application | `jitbox mcp --session`, `RemoteSession`, `connect` | call and manage sessions (`session.*.call`, `session.*.manage`, `sessions.activate`), read events |
 * | a worker pool | `jitbox worker --pool <pool>` | take its pool's invocations in the pool's queue groups only (no plain copy), fetch packages, call back, send heartbeats and capacity, verify leases and report what ran under them (as `worker-<pool>`) |
 * | a pinned worker | `jitbox worker --node <id>` | as a pool's worker, on `node.<id>.*.invoke` |
 * | an observer | `jitbox events tail` | read events and profile records, ask service discovery |
 *
 * The namespace's shared tool catalog (`KvCatalog`, bucket `jitbox-catalog-<namespace>`) keeps
 * what is published apart from who approved it: session hosts (whose sessions publish the tools
 * their agents wrote) may create the bucket, read it and write `entry.>` and `pkg.>` only; the
 * operator reads it and writes `review.>` only, so a session host cannot approve what it
 * published (with `catalogHostsApprove`, for a namespace that approves proposals as published,
 * session hosts write reviews too). Neither may purge or delete anything in it. Applications,
 * workers, observers and the coordinator have no access to it: an application reaches the
 * catalog through its sessions, whose policy decides, and a worker runs only the packages its
 * invocations name.
 *
 * Each principal asks the coordinator on subjects carrying its own user name,
 * `coordinator.<user>.<op>`, and may publish no other user's: the coordinator reads the asker from
 * the subject, so a session is renewed and released only by the principal that admitted it, and a
 * profile that lists `principals` admits only those. Commands ask as `--principal` (default: their
 * `--user`).
 *
 * Each principal reads replies on an inbox prefix of its own (`_INBOX_<user>`: give the command
 * `--inbox-prefix`), so no one reads another's replies; nobody may subscribe `_INBOX.>`.
 * Responders answer through `allow_responses` (only to the reply subject of a request they got).
 * Passwords are not in the file: each user's is the environment variable named in the block
 * (`$JITBOX_PASSWORD_<USER>`), which nats-server reads when it starts.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import * as KvCatalog from "./KvCatalog.js"
import * as KvLedger from "./KvLedger.js"
import * as KvSessionOwnership from "./KvSessionOwnership.js"
import * as KvSnapshotStore from "./KvSnapshotStore.js"

/** @since 0.1.0 @category models */
export type Language = "javascript" | "typescript" | "python" | "bash" | "csharp"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<Language> = ["javascript", "typescript", "python", "bash", "csharp"]

/** @since 0.1.0 @category models */
export interface AuthorizationOptions {
  readonly namespace: string
  /** The first token(s) of every subject (default `jitbox`). */
  readonly root?: string | undefined
  /** Application principals (default `app`). */
  readonly applications?: ReadonlyArray<string> | undefined
  /** Session host principals (default `sessions`). */
  readonly sessionHosts?: ReadonlyArray<string> | undefined
  /** Worker pools (default `default`), each a principal `worker-<pool>`. */
  readonly pools?: ReadonlyArray<string> | undefined
  /** Pinned workers (`sandboxNodeId`), each a principal `node-<id>`. */
  readonly nodes?: ReadonlyArray<string> | undefined
  /** Observer principals (default `observer`). */
  readonly observers?: ReadonlyArray<string> | undefined
  /** Session hosts may approve and revoke catalog entries too (for `jitbox sessions --catalog-approve-on-publish`; default false: only the operator). */
  readonly catalogHostsApprove?: boolean | undefined
}

/** One user of the block. @since 0.1.0 @category models */
export interface Principal {
  readonly user: string
  readonly role: "coordinator" | "operator" | "sessions" | "application" | "worker" | "node" | "observer"
  /** The inbox prefix its commands must be given (`--inbox-prefix`). */
  readonly inboxPrefix: string
  /** The environment variable holding its password, for nats-server and for the command (`JITBOX_PASSWORD`). */
  readonly passwordVariable: string
  readonly publish: ReadonlyArray<string>
  readonly subscribe: ReadonlyArray<string>
  readonly allowResponses: boolean
}

const discovery = (service: string) => ["$SRV.PING", "$SRV.INFO", "$SRV.STATS", `$SRV.*.${service}`, `$SRV.*.${service}.*`]

/** What only reads `bucket` (listing its keys takes a consumer). */
const bucketReadApi = (bucket: string): ReadonlyArray<string> => {
  const stream = `KV_${bucket}`
  return [
    "$JS.API.INFO",
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
    `$JS.FC.${stream}.>`
  ]
}

/** What the KV client asks of the JetStream API to open, read, write, list and purge `bucket`. */
const bucketApi = (bucket: string): ReadonlyArray<string> => [
  ...bucketReadApi(bucket),
  `$JS.API.STREAM.CREATE.KV_${bucket}`,
  `$JS.API.STREAM.PURGE.KV_${bucket}`,
  `$KV.${bucket}.>`
]

/** What publishes to the catalog `bucket` (and opens it, creating it if need be): its entries and packages, never its reviews. */
const catalogPublishApi = (bucket: string): ReadonlyArray<string> => [
  ...bucketReadApi(bucket),
  `$JS.API.STREAM.CREATE.KV_${bucket}`,
  `$KV.${bucket}.entry.>`,
  `$KV.${bucket}.pkg.>`
]

/** What reviews the catalog `bucket`: reading it and writing its reviews. */
const catalogReviewApi = (bucket: string): ReadonlyArray<string> => [...bucketReadApi(bucket), `$KV.${bucket}.review.>`]

const variableOf = (user: string) => `JITBOX_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`

const principal = (
  user: string,
  role: Principal["role"],
  rights: { readonly publish: ReadonlyArray<string>; readonly subscribe: ReadonlyArray<string>; readonly allowResponses: boolean }
): Principal => {
  const inboxPrefix = `_INBOX_${user}`
  return {
    user,
    role,
    inboxPrefix,
    passwordVariable: variableOf(user),
    publish: [...new Set(rights.publish)],
    subscribe: [...new Set([...rights.subscribe, `${inboxPrefix}.>`])],
    allowResponses: rights.allowResponses
  }
}

/** `name` when it is a subject token; else a `ConfigError` naming the flag it came from (`--pool`). */
const checkName = (what: string, name: string): string => {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new HarnessError.ConfigError({ option: `--${what.replace(" ", "-")}`, detail: `${what} ${JSON.stringify(name)}: letters, digits, "_" and "-" only (at most 64)` })
  }
  return name
}

/**
 * The principals of a namespace, with what each may publish and subscribe. Throws `ConfigError`
 * (naming the flag) for a name that is not a subject token.
 *
 * @since 0.1.0
 * @category constructors
 */
export const principals = (options: AuthorizationOptions): ReadonlyArray<Principal> => {
  const ns = checkName("namespace", options.namespace)
  const p = `${options.root ?? "jitbox"}.${ns}`
  const ledger = KvLedger.bucketOf(ns)
  const owners = KvSessionOwnership.bucketOf(ns)
  const snapshots = KvSnapshotStore.bucketOf(ns)
  const catalog = KvCatalog.bucketOf(ns)
  // each principal asks the coordinator on subjects carrying its own user name, and on no other's
  const coordinator = (user: string, ops: ReadonlyArray<string>) => ops.map((op) => `${p}.coordinator.${user}.${op}`)
  const workerRights = (user: string, invokes: ReadonlyArray<string>) => ({
    publish: [`${p}.session.*.package`, `${p}.session.*.nested`, `${p}.session.*.heartbeat`, `${p}.workers.capacity`, ...coordinator(user, ["verify", "ran"])],
    subscribe: [...invokes, `${p}.workers.cancel`, ...discovery("jitbox-worker")],
    allowResponses: true
  })
  return [
    principal("coordinator", "coordinator", {
      publish: bucketApi(ledger),
      subscribe: [`${p}.coordinator.*.* coordinator`, `${p}.workers.capacity`, ...discovery("jitbox-coordinator")],
      allowResponses: true
    }),
    principal("operator", "operator", {
      publish: [...coordinator("operator", ["leases", "workers", "policy"]), "$SRV.>", ...bucketReadApi(owners), ...catalogReviewApi(catalog)],
      subscribe: [],
      allowResponses: false
    }),
    ...(options.sessionHosts ?? ["sessions"]).map((name) =>
      principal(checkName("session host", name), "sessions", {
        publish: [
          `${p}.worker.*.*.invoke`,
          `${p}.node.*.*.invoke`,
          `${p}.workers.cancel`,
          ...coordinator(name, ["admit", "renew", "release", "policy"]),
          `${p}.events.*`,
          `${p}.profile.*`,
          ...bucketApi(snapshots),
          ...bucketApi(owners),
          ...catalogPublishApi(catalog),
          ...(options.catalogHostsApprove === true ? catalogReviewApi(catalog) : [])
        ],
        subscribe: [`${p}.session.*.*`, `${p}.sessions.activate sessions`],
        allowResponses: true
      })
    ),
    ...(options.applications ?? ["app"]).map((name) =>
      principal(checkName("application", name), "application", {
        publish: [`${p}.session.*.call`, `${p}.session.*.manage`, `${p}.sessions.activate`],
        subscribe: [`${p}.events.*`],
        allowResponses: false
      })
    ),
    ...(options.pools ?? ["default"]).map((pool) =>
      principal(`worker-${checkName("pool", pool)}`, "worker", workerRights(`worker-${pool}`, languages.map((language) => `${p}.worker.${pool}.${language}.invoke workers-${pool}-${language}`)))
    ),
    ...(options.nodes ?? []).map((node) => principal(`node-${checkName("node", node)}`, "node", workerRights(`node-${node}`, [`${p}.node.${node}.*.invoke`]))),
    ...(options.observers ?? ["observer"]).map((name) =>
      principal(checkName("observer", name), "observer", {
        publish: ["$SRV.>"],
        subscribe: [`${p}.events.*`, `${p}.profile.*`],
        allowResponses: false
      })
    )
  ]
}

const list = (subjects: ReadonlyArray<string>, indent: string): string =>
  subjects.length === 0 ? "[]" : `[\n${subjects.map((subject) => `${indent}  ${JSON.stringify(subject)}`).join("\n")}\n${indent}]`

const block = (principal: Principal): string => {
  const lines = [
    `    # ${principal.role}: connect with --user ${principal.user} --inbox-prefix ${principal.inboxPrefix}`,
    `    {`,
    `      user: ${JSON.stringify(principal.user)}`,
    `      password: $${principal.passwordVariable}`,
    `      permissions: {`,
    `        publish: { allow: ${list(principal.publish, "        ")} }`,
    `        subscribe: { allow: ${list(principal.subscribe, "        ")} }`,
    ...(principal.allowResponses ? [`        allow_responses: true`] : []),
    `      }`,
    `    }`
  ]
  return lines.join("\n")
}

/**
 * The `authorization { … }` block (with `jetstream {}` before it when `jetstream` is true) for
 * the namespace's principals.
 *
 * @since 0.1.0
 * @category constructors
 */
export const config = (options: AuthorizationOptions & { readonly jetstream?: boolean | undefined }): string => {
  const users = principals(options)
  return [
    `# jitbox: the principals of namespace ${options.namespace}, each allowed only what its role uses.`,
    `# Each password is read from the environment variable named beside it when nats-server starts.`,
    ...(options.jetstream === true ? ["jetstream {}", ""] : []),
    "authorization {",
    "  users = [",
    users.map(block).join("\n"),
    "  ]",
    "}",
    ""
  ].join("\n")
}
