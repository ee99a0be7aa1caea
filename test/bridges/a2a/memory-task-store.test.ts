import { MemoryTaskStore } from '../../../src/bridges/a2a/memory-task-store.ts';
import { taskStoreContract } from './task-store-contract.ts';

taskStoreContract('memory', (limits) => new MemoryTaskStore(limits));
