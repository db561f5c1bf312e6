import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HiveError } from '../errors.ts';

/**
 * The inspector's access token: 32 random bytes, base64url. Every request must carry it
 * (query `token`, header `x-hive-token`, or the HttpOnly cookie the page gets on its
 * first load). Compared in constant time: both sides are hashed to equal length first.
 */

export const TOKEN_COOKIE = 'hive_token';

export function createToken(): string {
  return randomBytes(32).toString('base64url');
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Constant-time equality of two strings (their lengths do not leak either). */
export function tokenMatches(given: string | null | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  return timingSafeEqual(digest(given), digest(expected)) && given.length === expected.length;
}

function cookie(req: IncomingMessage, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      // A bad %-escape is the client's mistake: a 400 that says so, never a 500.
      throw new HiveError('E_BAD_ARGS', `Malformed cookie ${name}: not valid percent-encoding`);
    }
  }
  return null;
}

/** The token a request presents, by the first channel that has one. */
export function presentedToken(req: IncomingMessage, url: URL): { token: string | null; via: 'query' | 'header' | 'cookie' | null } {
  const q = url.searchParams.get('token');
  if (q !== null) return { token: q, via: 'query' };
  const h = req.headers['x-hive-token'];
  if (typeof h === 'string') return { token: h, via: 'header' };
  const c = cookie(req, TOKEN_COOKIE);
  if (c !== null) return { token: c, via: 'cookie' };
  return { token: null, via: null };
}
