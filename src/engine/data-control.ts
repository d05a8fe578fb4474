// The data-control side of the Memory API: forget, export, import, the database's bytes, and sync's three methods. Each part is built from
// the dependencies it uses; the removal of turns (with what is derived from them) is shared by forget and by an
// import that undoes itself.
import { forgetApi } from './data-forget.js';
import { exportApi } from './data-export.js';
import { importApi } from './data-import.js';
import { createRemoval, turnRows } from './data-rows.js';
import type { DataDeps } from './data-types.js';
import { syncApplyApi } from './sync-apply.js';
import { syncReadApi } from './sync-changes.js';
import { createSyncStore } from '../store/sync-store.js';

export type { ExportData, ExportedConversation, ExportedTurn, ForgetInput, ForgetReport, ImportReport } from './data-types.js';
export { RETAG_ALL_TURNS } from './data-forget.js';

/** The data-control side of the Memory API: forget, export, import, the database's bytes. */
export function dataApi(d: DataDeps) {
  const remove = createRemoval(d);
  const sync = createSyncStore(d.driver);
  const { export: exportData, exportDatabase, rekey } = exportApi(d);
  return {
    ...forgetApi({ ...d, remove, sync }),
    // The read side gives syncChanges; the apply side syncState (where a resync starts) and applySync (where its sweep runs).
    syncChanges: syncReadApi({ driver: d.driver, sync, attachments: d.attachments, serial: d.serial, tree: d.tree }).syncChanges,
    ...syncApplyApi({ ...d, sync, remove }),
    export: exportData,
    ...importApi({ ...d, turnRows: (conversationId, where, params) => turnRows(d.driver, conversationId, where, params), remove }),
    exportDatabase,
    rekey,
  };
}

export type DataApi = ReturnType<typeof dataApi>;
