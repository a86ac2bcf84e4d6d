import type { AuditHead } from '@mnemo/core';

/**
 * The audit chain heads this process last committed, to append after
 * without reading the head first: the transaction locks the head's row and
 * checks it is the one expected in a statement it does not wait for
 * (`lockExpectedAuditHead`). A chain another process (or another transaction
 * of this one) writes to at the same time makes that check fail now and
 * then, and the transaction runs again reading the head.
 * Failures in a row make the chain's next transactions read the head first
 * (1, then 3, 7, … up to 63 of them, the run again included); each check that
 * holds halves that.
 */
export class ChainHeads {
  private readonly heads = new Map<string, AuditHead>();
  private readonly backoff = new Map<string, { left: number; next: number }>();

  /** The head to expect for `chain`, if this process knows it and the chain is not backing off. */
  expected(chain: string): AuditHead | undefined {
    const backoff = this.backoff.get(chain);
    if (backoff !== undefined && backoff.left > 0) {
      backoff.left -= 1;
      return undefined;
    }
    return this.heads.get(chain);
  }

  /** A transaction committed `head`; `checked`: it had expected the head before. */
  committed(head: AuditHead, checked: boolean): void {
    // Bounded: a process serving very many principals keeps the most recent ones.
    if (this.heads.size >= MAX_KNOWN_HEADS && !this.heads.has(head.chain)) this.heads.clear();
    // Transactions of one chain commit in order, but their replies may be read out of it.
    const known = this.heads.get(head.chain);
    if (known === undefined || known.seq < head.seq) this.heads.set(head.chain, head);
    const backoff = this.backoff.get(head.chain);
    if (checked && backoff !== undefined) {
      backoff.next >>= 1;
      if (backoff.next === 0) this.backoff.delete(head.chain);
    }
  }

  /** The head expected for `chain` was not its head (the transaction runs again reading it). */
  stale(chain: string): void {
    this.heads.delete(chain);
    // Bounded too: forgetting a backoff only makes the chain's next transaction expect its head.
    if (this.backoff.size >= MAX_KNOWN_HEADS && !this.backoff.has(chain)) this.backoff.clear();
    const next = Math.min(2 * (this.backoff.get(chain)?.next ?? 0) + 1, 63);
    // The run again reads the head (see `transactionOn`): it counts as the first.
    this.backoff.set(chain, { left: next - 1, next });
  }
}

/** Chains `ChainHeads` keeps a head, and a backoff, of at most. */
export const MAX_KNOWN_HEADS = 10_000;
