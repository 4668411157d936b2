/* A shared library named like a plugin but without the entry point. */
int xhal_not_a_plugin(void) { return 0; }
