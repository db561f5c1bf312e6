/** One entry of what a brain "remembers": the chat history of its session. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** How much of an earlier conversation survived a restart (the restore cascade). */
export type RestoreMode = 'new' | 'full' | 'tail' | 'amnesia';

/** What a brain sees of its conversation for one turn. */
export interface ConversationView {
  key: string;
  mode: RestoreMode;
  history: ChatMessage[];
  /** Text to brief the brain with before this turn (tail brief, amnesia notice, snapshot imports). */
  background: string[];
  /** The agent commit a full history is complete up to (see Session.historyCommit). */
  commit?: number;
}

export interface SessionCaps {
  /** Lines kept in transcript.jsonl. */
  transcriptLines: number;
  /** Turns (lines) kept in conversation.jsonl. */
  conversationTurns: number;
  /** history.json is not written above this size (a log line says so). */
  historyBytes: number;
  /** Characters of the newest turns in a tail brief. */
  tailBriefChars: number;
  /** Closed sessions kept in sessions.json; evicting one deletes its files. */
  archiveEntries: number;
}

export const DEFAULT_SESSION_CAPS: SessionCaps = {
  transcriptLines: 5_000,
  conversationTurns: 400,
  historyBytes: 512 * 1024,
  tailBriefChars: 6_000,
  archiveEntries: 60,
};

/** One line of transcript.jsonl: every event of a turn, hook events included. */
export interface TranscriptEvent {
  kind: string;
  [key: string]: unknown;
}
