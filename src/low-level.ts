/**
 * `hive-runtime/low-level`: the pieces under the runtime, for tools that write into a hive
 * or test a transport: outbox writers, the filesystem and JetStream transports, the hive's
 * folders and lock.
 */
export { ensureHive, ensureAgent, type AgentSpec } from './layout/ensure.ts';
export { hivePaths, agentPaths, type HivePaths, type AgentPaths } from './layout/paths.ts';
export { createFsTransport, type FsTransport, type FsTransportOptions } from './queue/fs-transport.ts';
export { createJetStreamTransport, type JetStreamTransport, type JetStreamTransportOptions } from './queue/jetstream-transport.ts';
export { writeOutbox, writeOutboxAsync, FLUSHED_MESSAGE_MODE } from './queue/outbox.ts';
export type { Transport, PendingItem, PendingOptions, DeliverOptions, CommitHint, DeliveryHint, AgentLink, RestoredAgent, ConversationStore } from './queue/transport.ts';
export type { ConversationReplica } from './session/replica.ts';
export type { FencedFiles, FencedValue } from './queue/jetstream-files.ts';
export type { PersistedAgentContext } from '../machines/agent.ts';
export type { SessionTurn } from './agent/state-store.ts';
export type { DeliveryOutcome } from './queue/inbox-writer.ts';
export type { InboxEntry } from './queue/inbox.ts';
export type { DeadLetterReason } from './queue/dead-letter.ts';
export { acquireHiveLock, type HiveLock, type HiveLockOptions } from './lock/hive-lock.ts';
export type { LockOwner } from './lock/owner.ts';
