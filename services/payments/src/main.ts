import { paymentsService } from './service';

void paymentsService.main();
