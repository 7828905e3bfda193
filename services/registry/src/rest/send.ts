import type { Response } from 'express';

/** A JSON answer; the registry's answers are never cached (a publish changes them at any moment). */
export const send = (res: Response, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res
    .status(status)
    .set({ 'cache-control': 'no-store', ...headers })
    .json(body);
};
