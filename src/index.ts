/**
 * Hive's public API. Everything else is internal.
 */
export { createHive, type Hive } from './hive.ts';
export { defineConfig, parseConfig, type HiveConfig, type HiveConfigInput, type BrainSpec, type AgentConfig } from './config/schema.ts';
export { loadConfig } from './config/load.ts';
export { defineBrain, type ModuleHandler, type ModuleContext } from './brains/module.ts';
export type { Brain, BrainInput, BrainOutput, BrainTurn, Draft, TimerRequest } from './brains/types.ts';
export {
  HiveMessageSchema,
  parseMessage,
  createMessage,
  ACTS,
  type HiveMessage,
  type HiveMessageInput,
  type Act,
} from './protocol/message.ts';
export { newId } from './protocol/ids.ts';
export { isAgentId, assertAgentId, AGENT_ID_PATTERN } from './protocol/agent-id.ts';
export { HiveError, isHiveError, ERROR_CODES, type HiveErrorCode } from './errors.ts';
export { ensureHive, ensureAgent, type AgentSpec } from './layout/ensure.ts';
export { hivePaths, agentPaths } from './layout/paths.ts';
export { createFsTransport } from './queue/fs-transport.ts';
export { writeOutbox, writeOutboxAsync, FLUSHED_MESSAGE_MODE } from './queue/outbox.ts';
export type { Transport, PendingItem } from './queue/transport.ts';
export { acquireHiveLock, type HiveLock } from './lock/hive-lock.ts';
export type { ActorStatus } from './supervisor/supervisor.ts';
export type { HiveEventMap, HiveEventName } from './supervisor/events.ts';
// Observability (issue 6)
export { otelEnvFor } from './telemetry/env.ts';
export type { ObserveOptions } from './telemetry/observer.ts';
export { startInspector, type Inspector } from './inspector/server.ts';
export { readLog } from './log/read.ts';
export { auditHistory, type AuditEntry } from './audit/history.ts';
export { remember, type MemoryInput, type RememberOptions, type Remembered } from './memory/remember.ts';
export { searchMemory, type MemorySearchOptions, type MemorySearchResult, type MemoryMatch } from './memory/search.ts';
export { memoryStatus, type MemoryStatus } from './memory/status.ts';
export { GET_MEMORY_TOOL, runGetMemory, type MemoryAccess } from './memory/tool.ts';
export { registerSummarizer, type Summarizer, type SummaryRequest, type SummaryEntry } from './memory/summarizer.ts';
export type { MinePassResult } from './memory/mine.ts';
export type { ReflectResult } from './memory/reflect.ts';
export { runChaos, formatReport, type ChaosOptions, type ChaosReport } from './chaos/engine.ts';
export { FAULT_KINDS, type FaultKind } from './chaos/faults.ts';
