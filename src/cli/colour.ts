/**
 * Colour for people at a terminal, none for programs: on when the stream is a TTY, off
 * when it is piped, with `NO_COLOR` set (https://no-color.org) or `TERM=dumb`;
 * `FORCE_COLOR` (not 0) turns it on anyway.
 */
export function colourWanted(isTTY: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return !!isTTY && env.TERM !== 'dumb';
}

const CODES = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof CODES;

/** A painter that colours when `on`, and leaves text alone otherwise. */
export function painter(on: boolean): (colour: Colour, text: string) => string {
  return on ? (colour, text) => `\x1b[${CODES[colour]}m${text}\x1b[0m` : (_colour, text) => text;
}

/** The colour of an actor's status: running green, paused or backing off yellow, failed red. */
export function statusColour(status: string): Colour | null {
  if (status === 'running' || status === 'active') return 'green';
  if (status.startsWith('failed')) return 'red';
  if (status.startsWith('paused') || status === 'backingOff' || status === 'starting') return 'yellow';
  return null;
}
