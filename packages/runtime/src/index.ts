/**
 * @since 0.1.0
 */
export * as Coordinator from "./Coordinator.js"

/**
 * @since 0.1.0
 */
export * as CoordinatorClient from "./CoordinatorClient.js"

/**
 * @since 0.1.0
 */
export * as CoordinatorProtocol from "./CoordinatorProtocol.js"

/**
 * @since 0.1.0
 */
export * as Envelope from "./Envelope.js"

/**
 * @since 0.1.0
 */
export * as ExecutionProfile from "./ExecutionProfile.js"

/**
 * @since 0.1.0
 */
export * as Ids from "./Ids.js"

/**
 * @since 0.1.0
 */
export * as LeasedAdmission from "./LeasedAdmission.js"

/**
 * @since 0.1.0
 */
export * as Ledger from "./Ledger.js"

/**
 * @since 0.1.0
 */
export * as RecordStore from "./RecordStore.js"

/**
 * @since 0.1.0
 */
export * as MemoryTransport from "./MemoryTransport.js"

/**
 * @since 0.1.0
 */
export * as Protocol from "./Protocol.js"

/**
 * @since 0.1.0
 */
export * as RemoteSession from "./RemoteSession.js"

/**
 * @since 0.1.0
 */
export * as SessionActor from "./SessionActor.js"

/**
 * @since 0.1.0
 */
export * as SessionApi from "./SessionApi.js"

/**
 * @since 0.1.0
 */
export * as SessionOwnership from "./SessionOwnership.js"

/**
 * @since 0.1.0
 */
export * as SessionProtocol from "./SessionProtocol.js"

/**
 * @since 0.1.0
 */
export * as Sessions from "./Sessions.js"

/**
 * @since 0.1.0
 */
export * as SnapshotStore from "./SnapshotStore.js"

/**
 * @since 0.1.0
 */
export * as Subject from "./Subject.js"

/**
 * @since 0.1.0
 */
export * as TraceContext from "./TraceContext.js"

/**
 * @since 0.1.0
 */
export * as ProtocolError from "./ProtocolError.js"

/**
 * @since 0.1.0
 */
export * as RemoteExecutionError from "./RemoteExecutionError.js"

/**
 * @since 0.1.0
 */
export * as Transport from "./Transport.js"

/**
 * @since 0.1.0
 */
export * as TransportError from "./TransportError.js"

/**
 * @since 0.1.0
 */
export * as WireError from "./WireError.js"

/**
 * @since 0.1.0
 */
export * as RemoteCodeRunner from "./RemoteCodeRunner.js"

/**
 * @since 0.1.0
 */
export * as Worker from "./Worker.js"

/**
 * @since 0.1.0
 */
export * as WorkerProtocol from "./WorkerProtocol.js"

/**
 * @since 0.1.0
 */
export * as StreamPublisher from "./StreamPublisher.js"

/**
 * @since 0.1.0
 */
export * as StreamProtocol from "./StreamProtocol.js"

/**
 * @since 0.1.0
 */
export * as ServiceDiscovery from "./ServiceDiscovery.js"

/**
 * @since 0.1.0
 */
export * as WorkerCapacity from "./WorkerCapacity.js"

/**
 * @since 0.1.0
 */
export * as SessionLeases from "./SessionLeases.js"

/**
 * @since 0.1.0
 */
export * as Embedded from "./Embedded.js"
