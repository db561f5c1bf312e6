/**
 * `hive-runtime`: Hive's public API. Everything else is internal. Brain files import
 * `hive-runtime/brain` (no runtime in it); queues, locks and the transport are in
 * `hive-runtime/low-level`; the chaos engine in `hive-runtime/chaos`.
 */
export { createHive, type Hive, type CreateHiveOptions } from './hive.ts';
export { defineConfig, parseConfig, type HiveConfig, type HiveConfigInput, type BrainSpec, type AgentConfig } from './config/schema.ts';
export { loadConfig } from './config/load.ts';
export { defineBrain, type ModuleHandler, type ModuleContext } from './brains/define.ts';
export type { Brain, BrainInput, BrainOutput, BrainTurn, Draft, TimerRequest, AgentIdentity, JsonValue, DurableTimer, MachineView, MachineStep } from './brains/types.ts';
export type { ConversationView, TranscriptEvent, ChatMessage, RestoreMode, SessionCaps } from './session/types.ts';
export {
  HiveMessageSchema,
  parseMessage,
  createMessage,
  ACTS,
  type HiveMessage,
  type HiveMessageInput,
  type Act,
  type ParseResult,
} from './protocol/message.ts';
export { newId } from './protocol/ids.ts';
export { isAgentId, assertAgentId, AGENT_ID_PATTERN } from './protocol/agent-id.ts';
export { HiveError, isHiveError, ERROR_CODES, type HiveErrorCode, type HiveErrorOptions } from './errors.ts';
export type { RegistryEntry, AgentStatus } from './registry/registry.ts';
export type { ActorStatus } from './supervisor/supervisor.ts';
export type { HiveEventMap, HiveEventName } from './supervisor/events.ts';
export type { Delivery } from './protocol/worker.ts';
export type { Question } from './human/questions.ts';
export type { DeadLetterEntry, DeadLetterReason } from './queue/dead-letter.ts';
export type { DeadLetterDetail } from './queue/dead-letter-tools.ts';
// Observability
export { otelEnvFor } from './telemetry/env.ts';
export type { ObserveOptions } from './telemetry/observer.ts';
export { startInspector, type Inspector } from './inspector/server.ts';
export { readLog } from './log/read.ts';
export type { LoggedEvent, HiveEvent } from './log/event-log.ts';
export { auditHistory, type AuditEntry } from './audit/history.ts';
// Memory
export { remember, type MemoryInput, type RememberOptions, type Remembered } from './memory/remember.ts';
export { searchMemory, type MemorySearchOptions, type MemorySearchResult, type MemoryMatch } from './memory/search.ts';
export { memoryStatus, type MemoryStatus } from './memory/status.ts';
export { GET_MEMORY_TOOL, runGetMemory, type MemoryAccess } from './memory/tool.ts';
export { registerSummarizer, type Summarizer, type SummarizerFactory, type SummaryRequest, type SummaryEntry } from './memory/summarizer.ts';
export type { MinePassResult } from './memory/mine.ts';
export type { ReflectResult } from './memory/reflect.ts';
