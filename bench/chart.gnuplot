# Proxy CPU time per request at concurrency 64, by mode, for the three
# proxies. Input: the cpu.dat that bench/report.py writes.
#   gnuplot -e "datafile='cpu.dat'; outfile='benchmarks-cpu.png'" chart.gnuplot
if (!exists("datafile")) datafile = 'cpu.dat'
if (!exists("outfile")) outfile = 'benchmarks-cpu.png'

set terminal pngcairo size 900,500 font "sans,11" noenhanced
set output outfile
set title "Proxy CPU per request at concurrency 64 (lower is better; bulk: per MiB)"
set ylabel "CPU µs (user + system)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set xtics nomirror
set datafile missing "NaN"
plot datafile using 2:xtic(1) title "sandgate-proxy" lc rgb "#1b9e77", \
     '' using 3 title "squid" lc rgb "#d95f02", \
     '' using 4 title "tinyproxy" lc rgb "#7570b3"
