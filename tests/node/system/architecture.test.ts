import { describe, expect, it } from 'vitest';
import { fileLengths, functionLengths, importCycles, layerViolations, topLevelSourceFiles } from '../../architecture.js';

// ARCHITECTURE.md's rules, measured with TypeScript's parser over src/ and worker/ (`npx tsx tests/architecture.ts`
// prints the same figures).
describe('the shape of the source', () => {
  it('has no import cycles', () => {
    expect(importCycles()).toEqual([]);
  });

  it('imports only down the layers: contracts, common, subsystems in their order, engine, surfaces, entries', () => {
    expect(layerViolations()).toEqual([]);
  });

  it('keeps at most 12 files directly in src/: the package entries', () => {
    expect(topLevelSourceFiles().length).toBeLessThanOrEqual(12);
  });

  it('has no function over 120 lines and no file over 400', () => {
    expect(functionLengths().filter((f) => f.lines > 120)).toEqual([]);
    expect(fileLengths().filter((f) => f.lines > 400)).toEqual([]);
  });
});
