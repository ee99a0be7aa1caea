import { MemoryEventLog } from '../../src/log/memory.ts';
import { eventLogContract } from './contract.ts';

eventLogContract('memory', () => new MemoryEventLog());
