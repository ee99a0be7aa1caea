/**
 * `npm run fuzz -- --count N [--seed S] [--path P]`: a long run of the whole-surface fuzz
 * (`surface.ts`). Prints the seed first, progress every 1,000 inputs, and a summary; exits 1 on a
 * finding (with the seed and path that replay it).
 */
import { parseArgs } from 'node:util';
import { runSurfaceFuzz } from './surface.ts';

const { values } = parseArgs({ options: { count: { type: 'string', default: '10000' }, seed: { type: 'string' }, path: { type: 'string' } } });
const report = await runSurfaceFuzz({
  count: Number(values.count),
  ...(values.seed !== undefined && { seed: Number(values.seed) }),
  ...(values.path !== undefined && { path: values.path }),
  log: (line) => console.log(line),
});
if (report.failure) {
  console.error(report.failure);
  process.exitCode = 1;
}
