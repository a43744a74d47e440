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
