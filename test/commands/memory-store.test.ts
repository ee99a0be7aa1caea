import { MemoryCommandStore } from '../../src/commands/memory-store.ts';
import { commandStoreContract, idempotencyContract, outboxContract } from './store-contract.ts';

const make = () => new MemoryCommandStore();
idempotencyContract('memory', make);
outboxContract('memory', make);
commandStoreContract('memory', make);
