"""memhog.py MIB: touch MIB MiB of memory in 64 MiB steps, reporting each."""
import sys

want = int(sys.argv[1])
hold, got = [], 0
while got < want:
    step = min(64, want - got)
    hold.append(bytearray(b"\x01") * (step << 20))	# written, so resident
    got += step
    print("allocated %d MiB" % got, flush=True)
print("done %d MiB" % got, flush=True)
