import picomatch from 'picomatch';
import { Lru } from '../common/cache.js';
import type { TagRule } from '../contracts/types.js';

/** A tag rule with its defaults filled in. */
export interface ResolvedRule {
  match: string;
  priority: number;
  ttlDays: number | null;
  summaryPrompt: string | null;
}

const DEFAULT_RULE: ResolvedRule = { match: '*', priority: 5, ttlDays: null, summaryPrompt: null };
const DAY = 86_400_000;

/** The first-match-wins rule list, compiled once with picomatch. */
export function createTagRules(rules: readonly TagRule[] = []) {
  const compiled = rules.map((r) => ({
    test: picomatch(r.match, { nocase: true }),
    rule: { match: r.match, priority: r.priority ?? 5, ttlDays: r.ttlDays ?? null, summaryPrompt: r.summaryPrompt ?? null },
  }));
  // The rule of each tag seen, for the most recent tags (every conversation's tags pass here).
  const cache = new Lru<string, ResolvedRule>(4096);
  const ruleFor = (tag: string): ResolvedRule => {
    let rule = cache.get(tag);
    if (!rule) {
      rule = compiled.find((c) => c.test(tag))?.rule ?? DEFAULT_RULE;
      cache.set(tag, rule);
    }
    return rule;
  };
  return {
    ruleFor,
    /**
     * A unit's priority (its highest-priority tag's) and whether it expired: memory stops being recalled once every
     * one of its tags has a TTL and the unit is older than it. Untagged memory follows the `*` rule.
     */
    judge(tags: readonly string[], lastMs: number, nowMs: number): { priority: number; expired: boolean } {
      const applied = tags.length > 0 ? tags.map(ruleFor) : [ruleFor('*')];
      const priority = Math.max(...applied.map((r) => r.priority));
      const expired = applied.every((r) => r.ttlDays !== null && nowMs - lastMs > r.ttlDays * DAY);
      return { priority, expired };
    },
  };
}

export type TagRules = ReturnType<typeof createTagRules>;
