#!/bin/busybox sh
echo "hello from ocibuild (busybox $(/bin/busybox | /bin/busybox head -1 | /bin/busybox cut -d' ' -f2))"
