#pragma once
// The score-locality view (engine/views/locality_view.h) as a chart (viz/chart.h): what the GUI's
// Score locality panel draws and what the report and `export` write as SVG.
#include <string>
#include <vector>

#include "engine/views/locality_view.h"
#include "viz/chart.h"

namespace hipstudio::viz {

// The histogram of heads[0] at its Delta (bars, series colour 0) with the fitted normal (a line,
// colour 1) and its KL as a legend note, beside the mean and standard deviation of delta against
// Delta on a log axis (colours 2h and 2h + 1 for the h-th head given) with heads[0]'s values at the
// histogram's Delta marked (the style's text colour).
Chart locality_chart(const std::vector<LocalityView>& heads, const std::string& title);
// The histogram plot alone.
Chart locality_histogram_chart(const LocalityView& view, const std::string& title);

}  // namespace hipstudio::viz
