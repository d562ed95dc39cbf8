#include <stdio.h>
#include "version.h"

int main(void) {
	printf("hello from the demo build, version %s\n", VERSION);
	return 0;
}
