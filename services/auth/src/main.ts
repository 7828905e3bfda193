import { authService } from './service';

void authService.main();
