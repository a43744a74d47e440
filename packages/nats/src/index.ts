/**
 * @jitbox/nats: the runtime over NATS, on one connection per process.
 *
 * Namespaces follow the module names; `connect`, what async code needs, is also exported directly.
 *
 * @since 0.1.0
 */
export { connect, type ConnectOptions } from "./Client.js"

/**
 * @since 0.1.0
 */
export * as Authorization from "./Authorization.js"

/**
 * @since 0.1.0
 */
export * as Client from "./Client.js"

/**
 * @since 0.1.0
 */
export * as KvCatalog from "./KvCatalog.js"

/**
 * @since 0.1.0
 */
export * as KvLedger from "./KvLedger.js"

/**
 * @since 0.1.0
 */
export * as KvSessionOwnership from "./KvSessionOwnership.js"

/**
 * @since 0.1.0
 */
export * as KvSnapshotStore from "./KvSnapshotStore.js"

/**
 * @since 0.1.0
 */
export * as NatsConnection from "./NatsConnection.js"

/**
 * @since 0.1.0
 */
export * as NatsTransport from "./NatsTransport.js"
