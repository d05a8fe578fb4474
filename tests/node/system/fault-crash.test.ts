// The standing fault suite, part 4: crash safety. Storage fails (before or after committing) or the engine is
// closed at a random write during ingest and compaction; afterwards no acknowledged turn is lost or altered, the
// full-text index finds every turn, units cover every turn and summaries tile the compacted range.
import { describe, expect, it } from 'vitest';
import { type ChatMessage, type Memory, PagewiseError, isPagewiseError } from '../../../src/index.js';
import { sqliteWasm } from '../../../src/storage/sqlite-wasm.js';
import type { StorageDriver } from '../../../src/contracts/types.js';
import { FAULT_SEED } from '../../support/fault-inputs.js';
import { assistant, createMemory, rng, user } from '../../support/helpers.js';

type Mode = 'fail-before-commit' | 'fail-after-commit' | 'close';
const MODES: Mode[] = ['fail-before-commit', 'fail-after-commit', 'close'];
const RUNS_PER_MODE = 56;
const PAIRS = 26;
const TOPICS = ['feed cache', 'Lisbon half-marathon', 'sourdough starter', 'rent stabilization', 'kubernetes upgrade'];

function pair(i: number): [ChatMessage, ChatMessage] {
  const topic = TOPICS[Math.floor(i / 3) % TOPICS.length]!;
  return [
    user(`About the ${topic}, step ${i}: what should we do next? token${i}u`, { id: `u${i}`, createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString() }),
    assistant(`For the ${topic}, step ${i}: keep option ${i * 7} because it costs ${i + 3} dollars. token${i}a`, { id: `a${i}`, createdAt: new Date(Date.UTC(2024, 0, 1, 0, i, 30)).toISOString() }),
  ];
}

/** The database stays open across engines; at the `at`-th batch the fault happens once. */
function faulty(driver: StorageDriver, mode: Mode, at: number, onClose: () => void): StorageDriver & { fired: boolean; armed: boolean } {
  let n = 0;
  const self: StorageDriver & { fired: boolean; armed: boolean } = {
    name: driver.name,
    fired: false,
    /** Faults count batches from here on (not the migrations'). */
    armed: false,
    query: (sql, params) => driver.query(sql, params),
    batch: async (statements) => {
      if (self.armed) n++;
      if (n !== at) return driver.batch(statements);
      self.fired = true;
      if (mode === 'fail-before-commit') throw new PagewiseError('STORAGE_ERROR', 'test', 'disk full (injected before commit)');
      await driver.batch(statements);
      if (mode === 'fail-after-commit') throw new PagewiseError('STORAGE_ERROR', 'test', 'I/O error reported after commit (injected)');
      onClose();
      return undefined;
    },
    close: () => undefined,
  };
  return self;
}

describe('crash safety: faults at random writes during ingest and compaction', () => {
  it(`${MODES.length * RUNS_PER_MODE} runs: no acknowledged turn lost, indexes consistent`, async () => {
    const random = rng(FAULT_SEED);
    const figures = { runs: 0, fired: 0, acknowledged: 0, lost: 0, compactions: 0 };
    for (const mode of MODES) {
      for (let run = 0; run < RUNS_PER_MODE; run++) {
        const db = await sqliteWasm()();
        // Batches in a run: ~3 per exchange plus compaction's; pick one of them.
        const at = 2 + Math.floor(random() * PAIRS * 3);
        let closing: Promise<void> | undefined;
        let engine: Memory | undefined;
        const driver = faulty(db, mode, at, () => { closing = engine!.close(); });
        engine = await createMemory({ contextWindow: 1500, storage: driver });
        driver.armed = true;
        const acknowledged = new Map<string, string>();
        for (let i = 0; i < PAIRS; i++) {
          const messages = pair(i);
          // A client retries once after a failure, as it would after a network error.
          for (let attempt = 0; attempt < 2; attempt++) {
            const report = await engine.onTurnComplete({ conversationId: 'c', messages }).catch((e: unknown) => {
              if (!isPagewiseError(e)) throw e;
              expect(['STORAGE_ERROR', 'ENGINE_CLOSED']).toContain(e.code);
              return null;
            });
            if (report) {
              for (const m of messages) acknowledged.set(m.id!, m.content as string);
              break;
            }
          }
        }
        await engine.flush().catch(() => []);
        await (closing ?? engine.close());
        figures.runs++;
        if (driver.fired) figures.fired++;

        // A new engine on what the first one left behind.
        const after = await createMemory({ contextWindow: 1500, storage: db });
        await after.onTurnComplete({ conversationId: 'c', messages: pair(PAIRS) });
        await after.flush();
        const stored = await after.turns('c', { limit: 10_000 });
        expect(stored.map((t) => t.seq)).toEqual(stored.map((_, i) => i));
        expect(new Set(stored.map((t) => t.id)).size).toBe(stored.length);
        const byId = new Map(stored.map((t) => [t.id, t.content]));
        for (const [id, content] of acknowledged) {
          if (byId.get(id) !== content) figures.lost++;
          expect(byId.get(id), `${mode} run ${run}: acknowledged ${id}`).toBe(content);
        }
        figures.acknowledged += acknowledged.size;
        // The full-text index finds every stored turn by its own token.
        for (const t of stored) {
          const token = /token\d+[ua]/.exec(t.content as string)?.[0];
          const hit = await after.callTool('pagewise_search', { query: token, limit: 3 }, { conversationId: 'c' });
          expect(hit.sourceIds, `${mode} run ${run}: ${t.id} in the index`).toContain(t.id);
        }
        // Units cover every turn; segments tile [0, watermark).
        const uncovered = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM turns t WHERE t.conversation_id = 'c'
          AND NOT EXISTS (SELECT 1 FROM units u WHERE u.conversation_id = 'c' AND t.seq BETWEEN u.unit_seq AND u.end_seq)`);
        expect(Number(uncovered[0]!.n), `${mode} run ${run}: turns outside every unit`).toBe(0);
        const segments = await db.query<{ first_seq: number; last_seq: number }>("SELECT first_seq, last_seq FROM summaries WHERE conversation_id = 'c' AND kind = 'segment' ORDER BY first_seq");
        const state = await db.query<{ watermark: number }>("SELECT watermark FROM compaction_state WHERE conversation_id = 'c'");
        let next = 0;
        for (const s of segments) {
          expect(Number(s.first_seq)).toBe(next);
          next = Number(s.last_seq) + 1;
        }
        expect(state[0] ? Number(state[0].watermark) : 0).toBe(next);
        if (segments.length > 0) figures.compactions++;
        await after.close();
        await db.close();
      }
    }
    console.log(`crash safety (seed ${FAULT_SEED}): ${figures.runs} runs, ${figures.fired} faults fired (fail before commit, fail after commit, close mid-write), ${figures.acknowledged} acknowledged turns checked, ${figures.lost} lost; ${figures.compactions} runs compacted`);
    expect(figures.lost).toBe(0);
    expect(figures.fired).toBeGreaterThan(figures.runs / 2);
    expect(figures.compactions).toBeGreaterThan(figures.runs / 2);
  }, 300_000);
});
