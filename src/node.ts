/**
 * pagewise/node: everything in pagewise, plus what only Node has (a database file). Kept out of the main entry, which
 * browsers and workerd load: this one imports node:fs.
 *
 * @module pagewise/node
 */
export * from './index.js';
export { fileStorage, type FileStorageOptions } from './storage/node-file.js';
