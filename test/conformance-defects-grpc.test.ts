// Every row of the defect catalogue planted over gRPC is reported by the rules it names (test/support/defect-run.ts).
import { test } from 'uvu';
import { defectTests } from './support/defect-run.js';

defectTests('grpc');
test.run();
