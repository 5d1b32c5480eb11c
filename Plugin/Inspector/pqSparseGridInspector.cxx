#include "pqSparseGridInspector.h"

#include "SparseGridInspection.h"
#include "vtkSparseGridReader.h"

#include <pqActiveObjects.h>
#include <pqApplicationCore.h>
#include <pqOutputPort.h>
#include <pqPipelineSource.h>
#include <vtkAlgorithm.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkSMInputProperty.h>
#include <vtkSMPropertyHelper.h>
#include <vtkSMSourceProxy.h>
#include <vtkSmartPointer.h>

#include <QDir>
#include <QFile>
#include <QFuture>
#include <QFutureWatcher>
#include <QGroupBox>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace sgi = sparsegrid_inspector;

namespace
{
/// Numbers as the panel writes them (the GUI tests parse them back): 6 significant digits.
QString Number(double value)
{
  if (std::isinf(value) || value >= 1e300)
  {
    return QStringLiteral("inf");
  }
  return QString::number(value, 'g', 6);
}

const char* const
  Columns[] = { "Array", "Ratio", "Stored", "Bound", "Max error", "RMSE", "PSNR (dB)" };
constexpr int ColumnCount = 7;
}

//------------------------------------------------------------------------------------------------
struct pqSparseGridInspector::Internals
{
  sgi::Inspection Shown;
  sgi::LevelCost ShownLevel;
  /// The panel's own reader of a .sgrid file (the representation, all levels), for a Sparse
  /// Grid Reader proxy whose output is the reconstructed image.
  vtkNew<vtkSparseGridReader> FileReader;
  std::string FileName;
  // The rate-distortion job.
  QFuture<sgi::RateDistortion> Job;
  std::shared_ptr<std::atomic<int>> Done;
  std::shared_ptr<std::atomic<bool>> Cancel;
  int Steps = 0;
  bool Running = false;
  QString SampleText;
  sgi::RateDistortion Rates;
  double CurrentRelative = 0;
  QString Applied;                        ///< the last bound set from the chart
  QPointer<pqPipelineSource> LevelSource; ///< the source the slider's level was chosen for
  // The level preview: decoded on a worker thread; a request while one runs waits for it.
  QFutureWatcher<sgi::Preview> PreviewJob;
  int WantedPreview = -1; ///< the level the slider shows (1-based, 0: all)
  std::vector<std::uint8_t> PreviewStream;
  sgi::Preview ShownPreview;
};

//------------------------------------------------------------------------------------------------
pqSparseGridInspector::pqSparseGridInspector(QWidget* parent)
  : QDockWidget(parent)
  , In(new Internals)
{
  this->setWindowTitle(tr("Compression Inspector"));
  auto* body = new QWidget(this);
  body->setObjectName("Body"); // names along the path the recorded tests use
  body->setMinimumWidth(520);
  this->Body = body;
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(4, 4, 4, 4);
  this->Summary = new QLabel(tr("Select a compressed dataset (Sparse Grid Hierarchize's output "
                                "or a .sgrid file)."),
    body);
  this->Summary->setObjectName("Summary");
  this->Summary->setWordWrap(true);
  layout->addWidget(this->Summary);
  layout->addWidget(this->buildTable());
  layout->addWidget(this->buildLevels());
  layout->addWidget(this->buildRates());
  layout->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName("Scroll");
  scroll->setWidgetResizable(true);
  scroll->setWidget(body);
  this->setWidget(scroll);

  this->Poll = new QTimer(this);
  this->Poll->setInterval(100);
  QObject::connect(this->Poll, &QTimer::timeout, this, &pqSparseGridInspector::pollRates);
  pqActiveObjects& active = pqActiveObjects::instance();
  QObject::connect(
    &active, &pqActiveObjects::sourceChanged, this, &pqSparseGridInspector::onSourceChanged);
  QObject::connect(&active, &pqActiveObjects::dataUpdated, this, &pqSparseGridInspector::refresh);
  // The sweep runs only while the panel is shown; showing it catches up.
  QObject::connect(this,
    &QDockWidget::visibilityChanged,
    this,
    [this](bool visible)
    {
      if (visible)
      {
        this->refresh();
      }
    });
  this->onSourceChanged(active.activeSource());
}

//------------------------------------------------------------------------------------------------
pqSparseGridInspector::~pqSparseGridInspector()
{
  this->In->PreviewJob.waitForFinished();
  if (this->In->Running)
  {
    this->In->Cancel->store(true);
    this->In->Job.waitForFinished();
  }
}

//------------------------------------------------------------------------------------------------
QWidget* pqSparseGridInspector::buildTable()
{
  auto* box = new QGroupBox(tr("Arrays"), this);
  box->setObjectName("ArraysBox");
  auto* layout = new QVBoxLayout(box);
  this->Table = new QTableWidget(0, ColumnCount, box);
  this->Table->setObjectName("Arrays");
  QStringList headers;
  for (const char* column : Columns)
  {
    headers << tr(column);
  }
  this->Table->setHorizontalHeaderLabels(headers);
  this->Table->verticalHeader()->hide();
  this->Table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  this->Table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  this->Table->setMinimumHeight(90);
  this->Table->setToolTip(tr("Ratio: the array's input bytes / its coded bytes (the total row: "
                             "SparseGrid.CompressionRatio). Bound: the absolute error bound every "
                             "voxel keeps. Max error, RMSE, PSNR: measured on every voxel by the "
                             "filter."));
  layout->addWidget(this->Table);
  this->Provenance = new QLabel(box);
  this->Provenance->setObjectName("Provenance");
  this->Provenance->setWordWrap(true);
  layout->addWidget(this->Provenance);
  return box;
}

//------------------------------------------------------------------------------------------------
QWidget* pqSparseGridInspector::buildLevels()
{
  auto* box = new QGroupBox(tr("Level of detail"), this);
  box->setObjectName("LevelBox");
  auto* layout = new QVBoxLayout(box);
  this->Level = new QSlider(Qt::Horizontal, box);
  this->Level->setObjectName("LevelSlider");
  this->Level->setToolTip(tr("Levels decoded, coarsest first; the right end reads all of them. "
                             "Set on the reader and on Resample To Image / Reconstruct "
                             "downstream, which then show that level."));
  this->Level->setPageStep(1);
  this->Level->setEnabled(false);
  QObject::connect(
    this->Level, &QSlider::valueChanged, this, &pqSparseGridInspector::onLevelChanged);
  layout->addWidget(this->Level);
  this->LevelText = new QLabel(box);
  this->LevelText->setObjectName("LevelText");
  this->LevelText->setWordWrap(true);
  layout->addWidget(this->LevelText);
  this->Preview = new QLabel(box);
  this->Preview->setObjectName("LevelPreview");
  this->Preview->setToolTip(tr("The middle slice of the first array (first piece, first "
                               "component) decoded at this level, grey from its min to its max."));
  layout->addWidget(this->Preview);
  QObject::connect(&this->In->PreviewJob,
    &QFutureWatcher<sgi::Preview>::finished,
    this,
    &pqSparseGridInspector::showPreview);
  return box;
}

//------------------------------------------------------------------------------------------------
QWidget* pqSparseGridInspector::buildRates()
{
  auto* box = new QGroupBox(tr("Rate and distortion against the bound (sample)"), this);
  box->setObjectName("RatesBox");
  auto* layout = new QVBoxLayout(box);
  this->Rates = new pqSparseGridInspectorPlot(box);
  this->Rates->setObjectName("RateChart");
  this->Rates->setToolTip(tr("Ratio (blue) and PSNR (orange) on a sample of the original, "
                             "against the relative bound. Click a point to set that bound on "
                             "Sparse Grid Hierarchize and apply it."));
  QObject::connect(this->Rates,
    &pqSparseGridInspectorPlot::boundClicked,
    this,
    &pqSparseGridInspector::applyBound);
  layout->addWidget(this->Rates);
  auto* row = new QHBoxLayout();
  this->Progress = new QProgressBar(box);
  this->Progress->setObjectName("RateProgress");
  this->RateButton = new QPushButton(tr("Cancel"), box);
  this->RateButton->setObjectName("RateButton");
  QObject::connect(
    this->RateButton, &QPushButton::clicked, this, &pqSparseGridInspector::onRateButton);
  row->addWidget(this->Progress, 1);
  row->addWidget(this->RateButton);
  layout->addLayout(row);
  this->RateText = new QLabel(box);
  this->RateText->setObjectName("RateText");
  this->RateText->setWordWrap(true);
  layout->addWidget(this->RateText);
  this->Errors = new pqSparseGridInspectorPlot(box);
  this->Errors->setObjectName("ErrorHistogram");
  this->Errors->setToolTip(tr("How the error |reconstructed - original| is spread between 0 and "
                              "the bound, on the sample, at the filter's bound."));
  layout->addWidget(this->Errors);
  return box;
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::stopRates()
{
  if (this->In->Running)
  {
    this->In->Cancel->store(true);
    this->In->Job.waitForFinished(); // at most one coding of the sample
    this->In->Running = false;
    this->Poll->stop();
  }
  this->In->Rates = sgi::RateDistortion();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::onSourceChanged(pqPipelineSource* source)
{
  this->stopRates();
  this->Source = source;
  this->In->Rates = sgi::RateDistortion();
  this->In->Applied.clear();
  this->refresh();
}

//------------------------------------------------------------------------------------------------
vtkDataObject* pqSparseGridInspector::representation()
{
  if (!this->Source)
  {
    return nullptr;
  }
  vtkSMProxy* proxy = this->Source->getProxy();
  auto* algorithm = vtkAlgorithm::SafeDownCast(proxy->GetClientSideObject());
  if (!algorithm)
  {
    return nullptr; // a remote server: the data is not in this process
  }
  if (QString(proxy->GetXMLName()) == "SparseGridReader" &&
    vtkSMPropertyHelper(proxy, "OutputReconstructedImage").GetAsInt() != 0)
  {
    // The proxy shows the reconstructed image; the panel reads the representation itself.
    const char* file = vtkSMPropertyHelper(proxy, "FileName").GetAsString();
    if (!file || !*file)
    {
      return nullptr;
    }
    if (this->In->FileName != file)
    {
      this->In->FileName = file;
      this->In->FileReader->SetFileName(file);
      this->In->FileReader->SetOutputReconstructedImage(false);
      this->In->FileReader->SetLevelOfDetail(0);
      this->In->FileReader->Update();
    }
    return this->In->FileReader->GetOutputDataObject(0);
  }
  return algorithm->GetOutputDataObject(0);
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::refresh()
{
  if (pqActiveObjects::instance().activeSource() != this->Source)
  {
    this->Source = pqActiveObjects::instance().activeSource();
  }
  sgi::Inspection& shown = this->In->Shown;
  shown = sgi::Inspect(this->representation());
  this->Table->setRowCount(0);
  // Connected to a separate pvserver the data lives there, not in this process.
  const bool remote = this->Source && !this->Source->getProxy()->GetClientSideObject();
  if (!shown.Valid)
  {
    this->Summary->setText(remote
        ? tr("The data is on the server: the inspector reads it in the client process, so it "
             "works in ParaView's built-in session. The numbers are in the Information panel "
             "(SparseGrid.* field data).")
        : tr("Select a compressed dataset (Sparse Grid Hierarchize's output or "
             "a .sgrid file): %1.")
            .arg(QString::fromStdString(shown.Message)));
    this->Provenance->clear();
    this->Level->setEnabled(false);
    this->LevelText->clear();
    this->Preview->clear();
    this->snapshot();
    return;
  }
  this->Summary->setText(QString("<b>%1</b>: %2")
                           .arg(this->Source ? this->Source->getSMName() : QString())
                           .arg(QString::fromStdString(shown.Summary).toHtmlEscaped()));
  this->Table->setRowCount(static_cast<int>(shown.Arrays.size()) + 1);
  int r = 0;
  for (const sgi::ArrayRow& a : shown.Arrays)
  {
    const QString none("-");
    const QStringList cells = { QString::fromStdString(a.Name),
      a.Bytes ? Number(static_cast<double>(a.RawBytes) / static_cast<double>(a.Bytes)) : none,
      a.Bytes ? QString::fromStdString(sgi::FormatBytes(a.Bytes)) : none,
      shown.Coded ? Number(a.Bound) : none,
      a.HasMetrics ? Number(a.MaxError) : none,
      a.HasMetrics ? Number(a.RMSE) : none,
      a.HasMetrics ? Number(a.PSNR) : none };
    for (int c = 0; c < ColumnCount; ++c)
    {
      this->Table->setItem(r, c, new QTableWidgetItem(cells[c]));
    }
    ++r;
  }
  const QStringList total = { tr("all arrays"),
    Number(shown.Ratio),
    shown.Coded ? QString::fromStdString(sgi::FormatBytes(shown.StoredBytes)) : QString("-"),
    QString(),
    QString(),
    QString(),
    QString() };
  for (int c = 0; c < ColumnCount; ++c)
  {
    this->Table->setItem(r, c, new QTableWidgetItem(total[c]));
  }
  QString bound = shown.Coded ? tr("%1 bound %2")
                                  .arg(QString::fromStdString(shown.BoundMode))
                                  .arg(Number(shown.RequestedBound))
                              : tr("fixed-level sparse grid (no bound)");
  this->Provenance->setText(tr("%1; backend %2%3; time %4 s")
                              .arg(bound)
                              .arg(QString::fromStdString(shown.Backend))
                              .arg(shown.BackendNote.empty()
                                  ? QString()
                                  : QString(" (%1)").arg(QString::fromStdString(shown.BackendNote)))
                              .arg(Number(shown.Seconds)));
  {
    // The level the reader reads; for the same filter, the level chosen before; else all.
    int value = shown.LevelOfDetail > 0 ? shown.LevelOfDetail : shown.Levels;
    vtkSMProxy* proxy = this->Source ? this->Source->getProxy() : nullptr;
    if (proxy && proxy->GetProperty("LevelOfDetail"))
    {
      const int read = vtkSMPropertyHelper(proxy, "LevelOfDetail").GetAsInt();
      value = read > 0 && read <= shown.Levels ? read : shown.Levels;
    }
    else if (this->In->LevelSource == this->Source && this->Level->maximum() == shown.Levels)
    {
      value = this->Level->value();
    }
    this->In->LevelSource = this->Source;
    const QSignalBlocker blocker(this->Level);
    this->Level->setEnabled(shown.Levels > 0);
    this->Level->setRange(1, std::max(1, shown.Levels));
    this->Level->setValue(value);
  }
  this->showLevel(this->Level->value());
  // A new sweep for a new source, and a new histogram when the bound changed.
  const sgi::RateDistortion& rates = this->In->Rates;
  const bool stale = rates.Points.empty() ||
    (shown.Coded && !shown.Arrays.empty() && rates.HistogramBound != shown.Arrays[0].Bound);
  // The sweep only while the panel is shown (showing it calls refresh).
  if (!this->In->Running && stale && rates.Message.empty() && !rates.Cancelled && !this->isHidden())
  {
    this->In->Rates = sgi::RateDistortion();
    this->startRates();
  }
  this->snapshot();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::showLevel(int level)
{
  const sgi::Inspection& shown = this->In->Shown;
  if (!shown.Valid || shown.Levels == 0)
  {
    this->In->ShownLevel = sgi::LevelCost();
    this->LevelText->setText(
      shown.Valid ? tr("no levels of detail (fixed-level sparse grid)") : "");
    return;
  }
  // Level n of n is "all levels" (0) for the readers.
  sgi::LevelCost& cost = this->In->ShownLevel;
  cost = sgi::InspectLevel(this->representation(), level >= shown.Levels ? 0 : level);
  if (!cost.Valid)
  {
    this->LevelText->setText(QString::fromStdString(cost.Message));
    return;
  }
  this->startPreview(level >= shown.Levels ? 0 : level);
  QStringList bounds;
  for (std::size_t i = 0; i < cost.Bounds.size() && i < shown.Arrays.size(); ++i)
  {
    bounds << QString("%1 %2")
                .arg(QString::fromStdString(shown.Arrays[i].Name))
                .arg(Number(cost.Bounds[i]));
  }
  this->LevelText->setText(
    tr("Level %1 of %2: reads %3 of %4 (%5 %); %6: %7")
      .arg(level)
      .arg(cost.Levels)
      .arg(QString::fromStdString(sgi::FormatBytes(cost.Bytes)))
      .arg(QString::fromStdString(sgi::FormatBytes(cost.TotalBytes)))
      .arg(cost.TotalBytes ? 100.0 * cost.Bytes / cost.TotalBytes : 0.0, 0, 'f', 1)
      .arg(cost.Measured ? tr("max error measured there") : tr("bound that holds"))
      .arg(bounds.join(", ")));
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::startPreview(int level)
{
  this->In->WantedPreview = level;
  if (this->In->PreviewJob.isRunning())
  {
    return; // showPreview starts the level wanted then
  }
  std::string message;
  this->In->PreviewStream = sgi::FirstStream(this->representation(), message);
  if (this->In->PreviewStream.empty())
  {
    this->In->ShownPreview = sgi::Preview();
    this->Preview->setText(QString::fromStdString(message));
    return;
  }
  const std::vector<std::uint8_t>* stream = &this->In->PreviewStream;
  this->In->PreviewJob.setFuture(
    QtConcurrent::run([stream, level]() { return sgi::DecodePreview(*stream, level); }));
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::showPreview()
{
  const sgi::Preview preview = this->In->PreviewJob.result();
  if (preview.Level != this->In->WantedPreview)
  {
    this->startPreview(this->In->WantedPreview);
    return;
  }
  this->In->ShownPreview = preview;
  if (preview.Values.empty())
  {
    this->Preview->setText(QString::fromStdString(preview.Message));
    this->snapshot();
    return;
  }
  QImage image(preview.Width, preview.Height, QImage::Format_Grayscale8);
  const double span = preview.Max > preview.Min ? preview.Max - preview.Min : 1.0;
  for (int y = 0; y < preview.Height; ++y)
  {
    uchar* line = image.scanLine(preview.Height - 1 - y); // the second axis upwards
    for (int x = 0; x < preview.Width; ++x)
    {
      const double v = preview.Values[static_cast<std::size_t>(y) * preview.Width + x];
      line[x] =
        static_cast<uchar>(std::max(0.0, std::min(255.0, 255.0 * (v - preview.Min) / span)));
    }
  }
  this->Preview->setPixmap(
    QPixmap::fromImage(image.scaled(256, 256, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
  this->snapshot();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::onLevelChanged(int level)
{
  this->showLevel(level);
  // The preview: the reader and the decompressing filters downstream read that level.
  if (this->Source)
  {
    const int value = level >= this->In->Shown.Levels ? 0 : level;
    QList<pqPipelineSource*> targets = this->Source->getAllConsumers();
    targets.prepend(this->Source);
    for (pqPipelineSource* target : targets)
    {
      vtkSMProxy* proxy = target->getProxy();
      if (proxy->GetProperty("LevelOfDetail") &&
        vtkSMPropertyHelper(proxy, "LevelOfDetail").GetAsInt() != value)
      {
        vtkSMPropertyHelper(proxy, "LevelOfDetail").Set(value);
        proxy->UpdateVTKObjects();
        target->updatePipeline();
        target->setModifiedState(pqProxy::UNMODIFIED);
      }
    }
    pqApplicationCore::instance()->render();
  }
  this->snapshot();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::startRates()
{
  const sgi::Inspection& shown = this->In->Shown;
  if (!shown.Valid || !shown.Coded || shown.Arrays.empty() || !this->Source || this->In->Running)
  {
    return;
  }
  // The original: Hierarchize's input; for a reader, its reconstructed image.
  vtkSMProxy* proxy = this->Source->getProxy();
  vtkImageData* image = nullptr;
  QString origin = tr("the original");
  if (auto* input = vtkSMInputProperty::SafeDownCast(proxy->GetProperty("Input")))
  {
    if (input->GetNumberOfProxies() > 0)
    {
      auto* algorithm = vtkAlgorithm::SafeDownCast(input->GetProxy(0)->GetClientSideObject());
      image = algorithm ? vtkImageData::SafeDownCast(
                            algorithm->GetOutputDataObject(input->GetOutputPortForConnection(0)))
                        : nullptr;
    }
  }
  else if (auto* algorithm = vtkAlgorithm::SafeDownCast(proxy->GetClientSideObject()))
  {
    image = vtkImageData::SafeDownCast(algorithm->GetOutputDataObject(0));
    origin = tr("the decompressed file");
  }
  const sgi::ArrayRow& first = shown.Arrays.front();
  auto sample = std::make_shared<sgi::Sample>(sgi::MakeSample(image, first.Name, 0, 48));
  if (sample->Values.empty())
  {
    this->RateText->setText(QString::fromStdString(sample->Message));
    this->Progress->setValue(0);
    return;
  }
  const double range = sample->Max - sample->Min;
  this->In->CurrentRelative = shown.BoundMode == "Relative"
    ? shown.RequestedBound
    : (range > 0 ? first.Bound / range : first.Bound);
  this->In->SampleText = tr("%1 of %2, %3 x %4 x %5 voxels from the middle")
                           .arg(QString::fromStdString(first.Name))
                           .arg(origin)
                           .arg(sample->Dims[0])
                           .arg(sample->Dims[1])
                           .arg(sample->Dims[2]);
  const std::vector<double> bounds = sgi::SweepBounds();
  this->In->Steps = static_cast<int>(bounds.size()) + 1;
  this->In->Done = std::make_shared<std::atomic<int>>(0);
  this->In->Cancel = std::make_shared<std::atomic<bool>>(false);
  auto done = this->In->Done;
  auto cancel = this->In->Cancel;
  const double histogramBound = first.Bound;
  this->In->Job = QtConcurrent::run(
    [sample, bounds, histogramBound, done, cancel]() {
      return sgi::ComputeRateDistortion(*sample, bounds, histogramBound, done.get(), cancel.get());
    });
  this->In->Running = true;
  this->Progress->setRange(0, this->In->Steps);
  this->Progress->setValue(0);
  this->RateButton->setText(tr("Cancel"));
  this->RateText->setText(tr("computing on %1 ...").arg(this->In->SampleText));
  this->Poll->start();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::pollRates()
{
  if (!this->In->Running)
  {
    this->Poll->stop();
    return;
  }
  this->Progress->setValue(this->In->Done->load());
  if (!this->In->Job.isFinished())
  {
    return;
  }
  this->Poll->stop();
  this->In->Running = false;
  this->In->Rates = this->In->Job.result();
  const sgi::RateDistortion& rates = this->In->Rates;
  this->RateButton->setText(tr("Recompute"));
  QVector<pqSparseGridInspectorPlot::Point> points;
  for (const sgi::RatePoint& p : rates.Points)
  {
    points.push_back({ p.RelativeBound, p.Ratio, p.PSNR });
  }
  this->Rates->setRateDistortion(points, this->In->CurrentRelative);
  QVector<double> bins;
  for (std::uint64_t b : rates.Histogram)
  {
    bins.push_back(static_cast<double>(b));
  }
  this->Errors->setHistogram(
    bins, tr("|error| / bound at the bound %1 (0 .. 1)").arg(Number(rates.HistogramBound)));
  if (rates.Cancelled)
  {
    this->RateText->setText(tr("cancelled"));
  }
  else if (!rates.Message.empty())
  {
    this->RateText->setText(QString::fromStdString(rates.Message));
  }
  else
  {
    this->RateText->setText(tr("%1. Click a point to use its bound.").arg(this->In->SampleText));
    this->Progress->setValue(this->In->Steps);
  }
  this->snapshot();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::onRateButton()
{
  if (this->In->Running)
  {
    this->In->Cancel->store(true);
    return;
  }
  this->In->Rates = sgi::RateDistortion();
  this->startRates();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::applyBound(double relative)
{
  if (!this->Source || !this->Source->getProxy()->GetProperty("ErrorBound"))
  {
    this->RateText->setText(tr("The bound is chosen on Sparse Grid Hierarchize: select it to "
                               "apply a bound from the chart."));
    return;
  }
  vtkSMProxy* proxy = this->Source->getProxy();
  vtkSMPropertyHelper(proxy, "ErrorBoundMode").Set(2); // Relative
  vtkSMPropertyHelper(proxy, "ErrorBound").Set(relative);
  proxy->UpdateVTKObjects();
  this->In->Applied = Number(relative);
  this->stopRates(); // the histogram is for the new bound
  this->Source->updatePipeline();
  this->Source->setModifiedState(pqProxy::UNMODIFIED);
  pqApplicationCore::instance()->render();
  this->refresh();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspector::snapshot()
{
  const QString folder = qEnvironmentVariable("SPARSEGRID_INSPECTOR_SNAPSHOT");
  if (folder.isEmpty())
  {
    return;
  }
  QJsonObject state;
  state["source"] = this->Source ? this->Source->getSMName() : QString();
  state["summary"] = this->Summary->text();
  QJsonArray rows;
  for (int r = 0; r < this->Table->rowCount(); ++r)
  {
    QJsonObject row;
    for (int c = 0; c < ColumnCount; ++c)
    {
      QTableWidgetItem* item = this->Table->item(r, c);
      row[Columns[c]] = item ? item->text() : QString();
    }
    rows.append(row);
  }
  state["arrays"] = rows;
  state["provenance"] = this->Provenance->text();
  state["level"] = this->Level->value();
  state["levels"] = this->In->Shown.Levels;
  state["level_text"] = this->LevelText->text();
  state["level_bytes"] = static_cast<double>(this->In->ShownLevel.Bytes);
  state["level_total_bytes"] = static_cast<double>(this->In->ShownLevel.TotalBytes);
  QJsonArray rates;
  for (const sgi::RatePoint& p : this->In->Rates.Points)
  {
    rates.append(QJsonArray{
      p.RelativeBound, p.Ratio, std::isinf(p.PSNR) ? 1e308 : p.PSNR, p.MaxError, p.AbsoluteBound });
  }
  state["rates"] = rates;
  QJsonArray histogram;
  for (std::uint64_t b : this->In->Rates.Histogram)
  {
    histogram.append(static_cast<double>(b));
  }
  state["histogram"] = histogram;
  state["rate_text"] = this->RateText->text();
  const sgi::Preview& preview = this->In->ShownPreview;
  state["preview"] =
    QJsonArray{ preview.Level, preview.Width, preview.Height, preview.Min, preview.Max };
  state["running"] = this->In->Running;
  state["applied"] = this->In->Applied;
  state["shown"] = !this->isHidden();
  state["visible"] = this->isVisible();
  QDir().mkpath(folder);
  QFile file(QDir(folder).filePath("inspector.json"));
  if (file.open(QIODevice::WriteOnly | QIODevice::Truncate))
  {
    file.write(QJsonDocument(state).toJson());
  }
  // The whole panel, also the part scrolled out of the dock.
  this->Body->grab().save(QDir(folder).filePath("inspector.png"));
}

//================================================================================================
pqSparseGridInspectorPlot::pqSparseGridInspectorPlot(QWidget* parent)
  : QWidget(parent)
{
  this->setMinimumHeight(130);
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::setRateDistortion(const QVector<Point>& points, double current)
{
  this->Histogram = false;
  this->Points = points;
  this->Current = current;
  this->update();
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::setHistogram(const QVector<double>& bins, const QString& caption)
{
  this->Histogram = true;
  this->Bins = bins;
  this->Caption = caption;
  this->update();
}

//------------------------------------------------------------------------------------------------
QRect pqSparseGridInspectorPlot::plotArea() const
{
  return this->rect().adjusted(44, 8, -44, -28);
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::paintEvent(QPaintEvent*)
{
  QPainter painter(this);
  painter.fillRect(this->rect(), this->palette().base());
  painter.setRenderHint(QPainter::Antialiasing);
  const QRect area = this->plotArea();
  painter.setPen(this->palette().color(QPalette::Mid));
  painter.drawRect(area);
  if (this->Histogram)
  {
    this->paintHistogram(painter, area);
  }
  else
  {
    this->paintRates(painter, area);
  }
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::paintRates(QPainter& painter, const QRect& area)
{
  if (this->Points.isEmpty())
  {
    painter.drawText(area, Qt::AlignCenter, tr("no points yet"));
    return;
  }
  double lo = this->Points.front().Bound, hi = lo, rmax = 0, pmin = 1e300, pmax = -1e300;
  for (const Point& p : this->Points)
  {
    lo = std::min(lo, p.Bound);
    hi = std::max(hi, p.Bound);
    rmax = std::max(rmax, p.Ratio);
    if (std::isfinite(p.PSNR) && p.PSNR < 1e300)
    {
      pmin = std::min(pmin, p.PSNR);
      pmax = std::max(pmax, p.PSNR);
    }
  }
  if (pmax < pmin)
  {
    pmin = 0;
    pmax = 1;
  }
  const double span = std::log10(hi) - std::log10(lo);
  auto x = [&](double b) {
    return area.left() + (span > 0 ? (std::log10(b) - std::log10(lo)) / span : 0.5) * area.width();
  };
  auto yRatio = [&](double r) { return area.bottom() - (rmax > 0 ? r / rmax : 0) * area.height(); };
  auto yPSNR = [&](double p)
  { return area.bottom() - (pmax > pmin ? (p - pmin) / (pmax - pmin) : 0.5) * area.height(); };
  const QColor ratio(31, 119, 180), psnr(255, 127, 14);
  QPainterPath ratioPath, psnrPath;
  for (int i = 0; i < this->Points.size(); ++i)
  {
    const Point& p = this->Points[i];
    const double pv = std::isfinite(p.PSNR) && p.PSNR < 1e300 ? p.PSNR : pmax;
    const QPointF a(x(p.Bound), yRatio(p.Ratio)), b(x(p.Bound), yPSNR(pv));
    i ? ratioPath.lineTo(a) : ratioPath.moveTo(a);
    i ? psnrPath.lineTo(b) : psnrPath.moveTo(b);
    painter.setPen(Qt::NoPen);
    painter.setBrush(ratio);
    painter.drawEllipse(a, 3.5, 3.5);
    painter.setBrush(psnr);
    painter.drawEllipse(b, 3.5, 3.5);
  }
  painter.setBrush(Qt::NoBrush);
  painter.setPen(QPen(ratio, 1.5));
  painter.drawPath(ratioPath);
  painter.setPen(QPen(psnr, 1.5));
  painter.drawPath(psnrPath);
  if (this->Current > 0)
  {
    painter.setPen(QPen(Qt::darkGray, 1, Qt::DashLine));
    const double cx = x(std::min(hi, std::max(lo, this->Current)));
    painter.drawLine(QPointF(cx, area.top()), QPointF(cx, area.bottom()));
  }
  const QFontMetrics metrics(painter.font());
  painter.setPen(ratio);
  painter.drawText(QRect(0, area.top(), area.left() - 4, metrics.height()),
    Qt::AlignRight,
    QString::number(rmax, 'g', 3));
  painter.drawText(QRect(0, area.bottom() - metrics.height(), area.left() - 4, metrics.height()),
    Qt::AlignRight,
    tr("ratio"));
  painter.setPen(psnr);
  painter.drawText(QRect(area.right() + 4, area.top(), 40, metrics.height()),
    Qt::AlignLeft,
    QString::number(pmax, 'f', 0));
  painter.drawText(QRect(area.right() + 4, area.bottom() - metrics.height(), 40, metrics.height()),
    Qt::AlignLeft,
    QString::number(pmin, 'f', 0) + " dB");
  painter.setPen(this->palette().color(QPalette::Text));
  painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()),
    Qt::AlignLeft,
    QString::number(lo, 'g', 2));
  painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()),
    Qt::AlignCenter,
    tr("relative bound (log)"));
  painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()),
    Qt::AlignRight,
    QString::number(hi, 'g', 2));
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::paintHistogram(QPainter& painter, const QRect& area)
{
  double top = 0;
  for (double b : this->Bins)
  {
    top = std::max(top, b);
  }
  const QFontMetrics metrics(painter.font());
  painter.setPen(this->palette().color(QPalette::Text));
  painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()),
    Qt::AlignCenter,
    this->Caption);
  if (this->Bins.isEmpty() || top <= 0)
  {
    return;
  }
  const double w = static_cast<double>(area.width()) / this->Bins.size();
  painter.setPen(Qt::NoPen);
  painter.setBrush(QColor(31, 119, 180));
  for (int i = 0; i < this->Bins.size(); ++i)
  {
    const double h = this->Bins[i] / top * area.height();
    painter.drawRect(QRectF(area.left() + i * w + 1, area.bottom() - h, w - 2, h));
  }
}

//------------------------------------------------------------------------------------------------
void pqSparseGridInspectorPlot::mousePressEvent(QMouseEvent* event)
{
  if (this->Histogram || this->Points.isEmpty())
  {
    return;
  }
  // The point nearest in x (a click left or right of the plot picks the end point).
  const QRect area = this->plotArea();
  const double lo = std::log10(this->Points.front().Bound);
  const double hi = std::log10(this->Points.back().Bound);
  int best = 0;
  double distance = 1e300;
  for (int i = 0; i < this->Points.size(); ++i)
  {
    const double t = hi != lo ? (std::log10(this->Points[i].Bound) - lo) / (hi - lo) : 0.5;
    const double px = area.left() + (hi > lo ? t : 1 - t) * area.width();
    if (std::abs(px - event->pos().x()) < distance)
    {
      distance = std::abs(px - event->pos().x());
      best = i;
    }
  }
  Q_EMIT this->boundClicked(this->Points[best].Bound);
}
