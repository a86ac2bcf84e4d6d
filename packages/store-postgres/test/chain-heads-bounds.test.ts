import type { AuditHead } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { ChainHeads, MAX_KNOWN_HEADS } from '../src/chain-heads.js';

const head = (chain: string, seq = 1): AuditHead => ({ chain, seq, hash: `h-${chain}-${seq}` });

describe('ChainHeads', () => {
  it('keeps the heads of at most MAX_KNOWN_HEADS chains: one more starts again from it', () => {
    const heads = new ChainHeads();
    for (let i = 0; i < MAX_KNOWN_HEADS; i += 1) heads.committed(head(`c${i}`), false);
    expect(heads.expected('c0')).toEqual(head('c0'));
    heads.committed(head('c0', 2), false);
    expect(heads.expected('c0')).toEqual(head('c0', 2));
    heads.committed(head('new'), false);
    expect(heads.expected('c0')).toBeUndefined();
    expect(heads.expected(`c${MAX_KNOWN_HEADS - 1}`)).toBeUndefined();
    expect(heads.expected('new')).toEqual(head('new'));
  });

  it('keeps the backoff of at most MAX_KNOWN_HEADS chains: one more forgets the others', () => {
    const heads = new ChainHeads();
    // Twice stale: its next 3 transactions read the head (the run again counted), so 2 more.
    heads.stale('c0');
    heads.stale('c0');
    for (let i = 1; i < MAX_KNOWN_HEADS; i += 1) heads.stale(`c${i}`);
    heads.committed(head('c0'), false);
    expect(heads.expected('c0')).toBeUndefined();
    heads.stale('one-more');
    // c0's backoff went with the others: its known head is expected at once.
    expect(heads.expected('c0')).toEqual(head('c0'));
  });
});
