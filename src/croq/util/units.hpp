// Figures for people: rates and times in a unit that fits (a CPU's 0.02 TFLOPS reads 20.0 GFLOPS,
// 0.0004 ms reads 0.4 µs), and plain-text tables. Machines get the JSON's raw numbers.
#pragma once
#include <string>
#include <vector>

namespace croq {

// 1234.5 -> "1234.5 TFLOPS"; 0.0213 -> "21.3 GFLOPS"; 2.1e-5 -> "21.0 MFLOPS".
std::string format_rate(double tflops);
// 1.5 -> "1.50 ms"; 0.0123 -> "12.3 µs"; 2500 -> "2.50 s".
std::string format_ms(double ms);
// Columns padded to their widest cell; the first row is the header.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace croq
