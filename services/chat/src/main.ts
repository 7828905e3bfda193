import { chatService } from './service';

void chatService.main();
