import { catalogService } from './service';

void catalogService.main();
