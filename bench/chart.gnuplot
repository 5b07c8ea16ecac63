# Proxy CPU time per request at concurrency 64, by mode, for the three
# proxies (left), and per MiB of a bulk download (right). Input: the
# cpu.dat that bench/report.py writes (bulk is its last row).
#   gnuplot -e "datafile='cpu.dat'; outfile='benchmarks-cpu.png'" chart.gnuplot
if (!exists("datafile")) datafile = 'cpu.dat'
if (!exists("outfile")) outfile = 'benchmarks-cpu.png'

set terminal pngcairo size 1000,500 font "sans,11" noenhanced
set output outfile
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set xtics nomirror

set multiplot layout 1,2 title "Proxy CPU (user + system) at concurrency 64, lower is better"
set origin 0,0
set size 0.7,0.92
set title "per request"
set ylabel "CPU µs per request"
set key below horizontal
plot datafile every ::0::3 using 2:xtic(1) title "sandgate-proxy" lc rgb "#1b9e77", \
     '' every ::0::3 using 3 title "squid" lc rgb "#d95f02", \
     '' every ::0::3 using 4 title "tinyproxy" lc rgb "#7570b3"
set origin 0.7,0
set size 0.3,0.92
set title "bulk transfer"
set ylabel "CPU µs per MiB"
unset key
plot datafile every ::4::4 using 2:xtic(1) lc rgb "#1b9e77", \
     '' every ::4::4 using 3 lc rgb "#d95f02", \
     '' every ::4::4 using 4 lc rgb "#7570b3"
unset multiplot
