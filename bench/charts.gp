# Charts of a bench/run.sh results directory (gnuplot; called by run.sh with
# -e "dir='results/...'").
set terminal pngcairo size 1100,620 font "DejaVu Sans,10" noenhanced
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left

# Ingestion: rows/s of every contender, log scale.
set output dir."/ingest.png"
set title "Rows/s into the throwaway MariaDB (SQLite where named): same table, same rows; log scale"
set rmargin 14
set logscale y
set yrange [100:*]
set ylabel "rows/s"
set xtics rotate by -35 scale 0 font ",9"
set bmargin 11
plot dir."/ingest.csv" every ::1 using 4:xtic(1) title "rows/s" linecolor rgb "#3465a4"

# Hot path: median ns per record, 1 and 2 producer threads, log scale.
set output dir."/hot_path.png"
set title "Producer cost per record: median ns (one op in 8 timed with the TSC; log scale)"
set yrange [10:*]
set ylabel "ns (p50)"
set xtics rotate by 0 font ",10"
set bmargin 4
set rmargin 4
plot dir."/hot_path_threads1.csv" using 3:xtic(1) title "1 producer" linecolor rgb "#3465a4", \
     dir."/hot_path_threads2.csv" using 3 title "2 producers" linecolor rgb "#f57900"

# Memory under a stalled database: resident set over time.
unset logscale y
set style data lines
set output dir."/stall_rss.png"
set key bottom right
set title "Resident memory while the database is stalled, then released"
set xlabel "seconds"
set ylabel "RSS (MB)"
set yrange [0:*]
set xtics auto
plot dir."/stall_rss_block.csv" using 2:3 title "block" linewidth 2, \
     dir."/stall_rss_drop.csv" using 2:3 title "drop" linewidth 2
