// `memwatch fit` and `memwatch predict` as a user runs them: real files, the built binary, exit
// statuses and messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "memwatch/model/largest_fitting.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/model/table_parse.hpp"
#include "process.hpp"
#include "synthetic.hpp"

namespace {

struct Result {
  int status = -1;  // the exit status; -1 when a signal ended it
  std::string out;
  std::string err;
};

class Cli : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.file(name);
    std::ofstream(path) << text;
    return path;
  }

  // `memwatch` with `args`, split at spaces (no argument here has one).
  Result run(const std::string& args) {
    std::vector<std::string> argv = {MEMWATCH_BIN};
    std::istringstream words(args);
    for (std::string word; words >> word;) argv.push_back(word);
    const memwatch::test::Finished f = memwatch::test::run(argv);
    return {f.signaled ? -1 : f.exit_code, f.out, f.err};
  }

  // A sweep file from the U-net-shaped truth, with the measurement columns a sweep writes.
  std::string sweep_file() {
    const auto d = memwatch::model::testing::unet_grid(0.002, 6);
    std::string text =
        "batch,dim,filters,levels,host_peak_bytes,rss_hwm_bytes,elapsed_s,exit_status\n";
    for (const auto& r : d.rows) {
      char line[256];
      std::snprintf(line, sizeof line, "%g,%g,%g,%g,%.0f,%.0f,1.5,0\n", r.x[0], r.x[1], r.x[2],
                    r.x[3], r.y, r.y * 1.1);
      text += line;
    }
    text += "32,144,32,5,1,1,0.1,137\n";  // an OOM-killed run: skipped with a note
    return write("sweep.csv", text);
  }

  memwatch::test::TempDir dir_;
};

TEST_F(Cli, FitPrintsFormulaErrorsAndBound) {
  const Result r = run("fit --input " + sweep_file() + " --target host_peak_bytes");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("host_peak_bytes = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch * dim^3 * filters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loo MAPE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train MAPE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("jackknife+"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("exit_status 137"), std::string::npos) << r.err;
}

TEST_F(Cli, FitTakesStatedAxesAndNamesWhatItCannotUse) {
  const std::string data = sweep_file();
  const Result stated = run("fit --input " + data + " --axes dim=3,batch=1");
  ASSERT_EQ(stated.status, 0) << stated.err;
  EXPECT_NE(stated.out.find("batch * dim^3 * filters"), std::string::npos) << stated.out;
  const Result typo = run("fit --input " + data + " --axes dims=3");
  EXPECT_EQ(typo.status, 1);
  EXPECT_NE(typo.err.find("'dims'"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find(data), std::string::npos) << typo.err;
  const Result unreadable = run("fit --input " + data + " --axes dim=three");
  EXPECT_EQ(unreadable.status, 2);
  EXPECT_NE(unreadable.err.find("--axes 'dim=three': expected PARAMETER=AXES"), std::string::npos)
      << unreadable.err;
}

TEST_F(Cli, FitWidensItsDictionaryToExtraPsForms) {
  std::string logs = "x,y,v\n", products = "a,b,c,d,v\n";
  for (int x : {4, 8, 16, 32, 64})
    for (int y : {2, 4, 8, 16, 32})
      logs += std::to_string(x) + "," + std::to_string(y) + "," +
              std::to_string(1e6 + 500.0 * x * std::pow(std::log2(y), 2)) + "\n";
  for (int a : {1, 2, 3, 4})
    for (int b : {2, 4, 8})
      for (int c : {1, 2, 4})
        for (int d : {3, 5, 7})
          products += std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "," +
                      std::to_string(d) + "," + std::to_string(100 + 3 * a * b * c * d) + "\n";
  const Result squared = run("fit --input " + write("logs.csv", logs) + " --log-power 2");
  ASSERT_EQ(squared.status, 0) << squared.err;
  EXPECT_NE(squared.out.find("v = 1e+06 + 500 * x * log2(y)^2\n"), std::string::npos)
      << squared.out;
  const std::string products_file = write("products.csv", products);
  const Result four = run("fit --input " + products_file + " --factors 4");
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_NE(four.out.find("v = 100 + 3 * a * b * c * d\n"), std::string::npos) << four.out;
  for (const char* bad : {"--factors 0", "--factors 2.5", "--log-power 4"}) {
    const Result refused = run("fit --input " + products_file + " " + bad);
    EXPECT_EQ(refused.status, 2) << bad;
    EXPECT_NE(refused.err.find("expected a whole number from "), std::string::npos) << refused.err;
  }
}

TEST_F(Cli, FitJsonFeedsPredict) {
  const std::string data = sweep_file();
  const Result fitted = run("fit --input " + data + " --json");
  ASSERT_EQ(fitted.status, 0) << fitted.err;
  const auto model = nlohmann::json::parse(fitted.out);
  EXPECT_EQ(model["schema"], "memwatch.model/1");
  const std::string model_path = write("model.json", fitted.out);

  const Result many = run("predict --model " + model_path + " --input " + data + " --json");
  ASSERT_EQ(many.status, 0) << many.err;
  const auto predictions = nlohmann::json::parse(many.out);
  ASSERT_TRUE(predictions.is_array());
  EXPECT_EQ(predictions.size(), memwatch::model::testing::unet_grid(0, 1).rows.size() + 1);
  for (const auto& p : predictions)
    EXPECT_GE(p["upper"].get<double>(), p["prediction"].get<double>());

  const Result one =
      run("predict --model " + model_path + " batch=8 dim=96 filters=16 levels=4 --json");
  ASSERT_EQ(one.status, 0) << one.err;
  const auto point = nlohmann::json::parse(one.out);
  const double truth = memwatch::model::testing::unet_truth({8, 96, 16, 4});
  EXPECT_NEAR(point["prediction"].get<double>(), truth, 0.01 * truth);

  const Result text = run("predict --model " + model_path + " batch=8 dim=200 filters=16 levels=4");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("extrapolating"), std::string::npos) << text.out;
}

TEST_F(Cli, JsonLinesInput) {
  std::string text;
  for (double b : {1, 2, 4, 8})
    for (double d : {32, 64, 96})
      text += "{\"params\":{\"batch\":" + std::to_string(b) + ",\"dim\":" + std::to_string(d) +
              "},\"value\":" + std::to_string(1e6 + 10 * b * d * d * d) + "}\n";
  const Result r = run("fit --input " + write("runs.jsonl", text));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("batch * dim^3"), std::string::npos) << r.out;
}

TEST_F(Cli, MaxFromAModelFileAnswersAsTheFittedModel) {
  const std::string data = sweep_file();
  const Result fitted = run("fit --input " + data + " --json");
  ASSERT_EQ(fitted.status, 0) << fitted.err;
  const std::string model_path = write("model.json", fitted.out);
  const Result r = run("max --model " + model_path +
                       " --vary batch --capacity 12GiB dim=144 filters=16 levels=4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto answer = nlohmann::json::parse(r.out);

  std::ifstream in(data);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  using namespace memwatch::model;
  const Model m = fit(parse_table(text, {}));
  const Point p{{{"dim", 144}, {"filters", 16}, {"levels", 4}}, {}};
  const Fitting direct = largest_fitting(m, p, "batch", 12.0 * (1 << 30));
  EXPECT_EQ(answer["value"].get<double>(), direct.value);
  EXPECT_EQ(answer["upper_bytes"].get<double>(), direct.at.upper);
  // The truth's largest batch, by the formula the sweep was made from.
  double truth = 0;
  while (memwatch::model::testing::unet_truth({truth + 1, 144, 16, 4}) <= 12.0 * (1 << 30)) ++truth;
  EXPECT_LE(direct.value, truth);
  EXPECT_GE(direct.value, truth - 1);

  const Result words = run("max --model " + model_path +
                           " --vary batch --capacity 12GiB dim=144 filters=16 levels=4");
  ASSERT_EQ(words.status, 0) << words.err;
  EXPECT_NE(words.out.find("largest batch that fits in 12.00 GiB: "), std::string::npos)
      << words.out;
  EXPECT_EQ(run("max --model " + model_path + " --vary batch --capacity lots dim=144").status, 2);
  EXPECT_EQ(run("max --model " + model_path +
                " --vary nope --capacity 1GiB dim=144 filters=16 "
                "levels=4")
                .status,
            2);
}

struct BadFile {
  const char* name;
  const char* text;
  const char* where;    // "line N"
  const char* problem;  // words of the message
};

TEST_F(Cli, MalformedFilesExitNonZeroNamingFileLineAndProblem) {
  const BadFile cases[] = {
      {"nonnumber.csv", "batch,dim,peak\n1,32,10\n2,3z,20\n4,64,30\n5,64,35\n", "line 3",
       "non-number '3z'"},
      {"missing.csv", "batch,dim,peak\n1,32,10\n2,32,20\n4,64,30\n", "line 1", "no column 'host'"},
      {"ragged.csv", "batch,dim,peak\n1,32,10\n2,32,20\n4,64\n", "line 4", "ragged row"},
      {"few.csv", "batch,dim,filters,peak\n1,32,8,10\n2,32,8,20\n4,64,8,30\n", "line 4",
       "3 usable runs for 3 parameters"},
      {"bad.jsonl",
       "{\"params\":{\"batch\":1},\"value\":10}\n{\"params\":{\"batch\":2},\"value\":null}\n",
       "line 2", "non-number null"},
  };
  for (const auto& c : cases) {
    const std::string path = write(c.name, c.text);
    const std::string target = std::string(c.name) == "missing.csv" ? " --target host" : "";
    const Result r = run("fit --input " + path + target);
    EXPECT_NE(r.status, 0) << c.name;
    EXPECT_NE(r.err.find(path + ": " + c.where), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.problem), std::string::npos) << c.name << ": " << r.err;
  }
}

TEST_F(Cli, PredictErrorsExitNonZero) {
  const std::string model = write("model.json", run("fit --input " + sweep_file() + " --json").out);
  const Result missing = run("predict --model " + model + " batch=8 dim=96");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("missing parameter 'filters'"), std::string::npos) << missing.err;
  const std::string points = write("points.csv", "batch,dim,filters,levels\n1,32,8,3\n2,x,8,3\n");
  const Result bad = run("predict --model " + model + " --input " + points + " --json");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find(points + ": line 3: non-number 'x'"), std::string::npos) << bad.err;
  const Result not_model = run("predict --model " + points + " batch=1");
  EXPECT_NE(not_model.status, 0);
  EXPECT_NE(not_model.err.find(points), std::string::npos) << not_model.err;
  EXPECT_NE(run("fit --input " + dir_.file("nothing.csv")).status, 0);
  EXPECT_EQ(run("fit").status, 2);
}

}  // namespace
