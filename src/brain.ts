/**
 * `hive-runtime/brain`: what a module brain's file imports. Loads nothing of the runtime.
 * @example
 * import { defineBrain } from 'hive-runtime/brain';
 * export default defineBrain((input, ctx) => {
 *   if (input.kind === 'message') ctx.reply(`heard: ${input.message.body}`);
 * });
 */
export { defineBrain, type ModuleContext, type ModuleHandler } from './brains/define.ts';
export type { AgentIdentity, BrainInput, BrainOutput, Draft, JsonValue, TimerRequest, DurableTimer, MachineView, MachineStep } from './brains/types.ts';
export type { HiveMessage, Act } from './protocol/message.ts';
export type { MemoryAccess } from './memory/tool.ts';
