#include <stdio.h>
#include "config.h"

int main(void) {
	printf("hello from %s\n", BUILD_NAME);
	return 0;
}
