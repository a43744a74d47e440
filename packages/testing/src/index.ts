/**
 * @since 0.1.0
 */
export * as NatsServer from "./NatsServer.js"
