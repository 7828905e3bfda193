import { contentService } from './service';

void contentService.main();
