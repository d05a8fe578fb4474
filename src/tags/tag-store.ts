import { inListSize, limitsOf } from '../storage/limits.js';
import type { StorageDriver } from '../contracts/types.js';
import { createAliasStore } from './tag-aliases.js';
import { createTagStats } from './tag-stats.js';
import { createUnitReader, createUnitWriter } from './tag-units.js';

export type { AliasRewrite, TagAlias } from './tag-aliases.js';
export type { TagStat } from './tag-stats.js';
export type { UnitTags } from './tag-units.js';

/**
 * Every SQL statement of the turn tag index, aliases and term statistics: the units as the tagger writes them and
 * as the other layers read them, the statistics, and the aliases, each built on its own.
 */
export function createTagStore(driver: StorageDriver) {
  const limits = limitsOf(driver);
  // Values per IN list beside the conversation id (touch binds the time too).
  const per = inListSize(limits, 2);
  return {
    ...createUnitWriter(driver, limits),
    ...createTagStats(driver, limits, per),
    ...createUnitReader(driver, limits),
    ...createAliasStore(driver),
  };
}

export type TagStore = ReturnType<typeof createTagStore>;
