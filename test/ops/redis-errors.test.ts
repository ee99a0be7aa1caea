/**
 * Which Redis errors are "not now" (503 `STORE_UNAVAILABLE`) and which stay what they are: the
 * reply prefixes of the servers' passing refusals, bare and as a script reports them.
 */
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ProtoError } from '../../src/errors.ts';
import { NOT_NOW_REPLIES, whileRedisAnswers } from '../../src/storage/redis-errors.ts';

/** What `whileRedisAnswers` makes of `err`. */
async function outcome(err: Error): Promise<unknown> {
  return whileRedisAnswers('the test store', () => Promise.reject(err)).catch((thrown: unknown) => thrown);
}

describe('whileRedisAnswers', () => {
  it.each([
    'READONLY You can\'t write against a read only replica.',
    'OOM command not allowed when used memory > \'maxmemory\'.',
    'LOADING Redis is loading the dataset in memory',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.',
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'CLUSTERDOWN The cluster is down',
    'NOREPLICAS Not enough good replicas to write.',
    'ERR Error running script (call to f_0123): @user_script:3: @user_script: 3: -READONLY You can\'t write against a read only replica.',
    'OOM command not allowed when used memory > \'maxmemory\'. script: 0123, on @user_script:4.',
  ])('%s is 503 STORE_UNAVAILABLE with Retry-After', async (message) => {
    const thrown = await outcome(new ReplyError(message));
    expect(thrown).toBeInstanceOf(ProtoError);
    expect((thrown as ProtoError).code).toBe('STORE_UNAVAILABLE');
    expect((thrown as ProtoError).headers).toEqual({ 'Retry-After': '1' });
  });

  it('a connection reset is 503 too, and the message asks for a retry with the same id', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const thrown = (await outcome(reset)) as ProtoError;
    expect(thrown.code).toBe('STORE_UNAVAILABLE');
    expect(thrown.message).toContain('same id');
    expect(thrown.message).not.toContain('nothing was stored');
  });

  it('another reply error (a bug in a script) stays what it is', async () => {
    const bug = new ReplyError('ERR Error running script (call to f_0123): @user_script:1: attempt to compare nil with number');
    expect(await outcome(bug)).toBe(bug);
    expect(NOT_NOW_REPLIES).toContain('BUSY');
  });
});
