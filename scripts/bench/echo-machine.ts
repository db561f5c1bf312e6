// The echo agent written as a user's XState machine (bench:hive's machine agents): one
// state, each request answered with its body, as a team would write it with hiveReply.
import { setup } from 'xstate';
import { hiveReply, type HiveMachineEvent } from 'hive-runtime/machine';

export default setup({ types: { events: {} as HiveMachineEvent } }).createMachine({
  id: 'echo',
  initial: 'listening',
  states: { listening: { on: { 'hive.request': { actions: hiveReply(({ event }) => event.message.body) } } } },
});
